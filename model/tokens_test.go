package model

import "testing"

func TestParseTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1500", 1500, true},
		{" 200k ", 200_000, true},
		{"128K", 128_000, true},
		{"2M", 2_000_000, true},
		{"1.5m", 1_500_000, true},
		{"1000000000000", MaxTokenCount, true},
		{"1000000000001", 0, false},
		{"1000001m", 0, false},
		{"0", 0, false},
		{"-5k", 0, false},
		{"0.0001k", 0, false},
		{"nan", 0, false},
		{"inf", 0, false},
		{"k", 0, false},
		{"", 0, false},
		{"huge", 0, false},
		{"12 k", 0, false},
	} {
		got, ok := ParseTokens(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseTokens(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
