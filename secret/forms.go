package secret

import "encoding/base64"

// Forms returns the texts a secret's value is recognised in: the value
// itself, then the base64 forms of it — standard and URL-safe alphabets, at
// each of the three alignments the value can have in the bytes that were
// encoded (its offset modulo 3). A base64 form holds only the characters
// that depend on the value alone: the characters shared with the bytes
// before or after it differ from one text to the next, so they are left
// out, and a redaction leaves them in place (they carry at most a few bits
// of the value's first and last bytes). Where the two alphabets give the
// same form it is listed twice, so that the number of forms says nothing
// about the value.
func Forms(value string) []string {
	out := []string{value}
	if value == "" {
		return out
	}
	for align := 0; align < 3; align++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			f := aligned(enc, value, align)
			if len(f) >= MinLen {
				out = append(out, f)
			}
		}
	}
	return out
}

// aligned is the base64 form of value when it starts align bytes after a
// multiple of 3 in the encoded bytes: the characters of enc's encoding whose
// six bits all come from value. Bit 8·align is where the value starts and
// bit 8·(align+len) where it ends; character j covers bits [6j, 6j+6).
func aligned(enc *base64.Encoding, value string, align int) string {
	buf := make([]byte, align+len(value)+2)
	copy(buf[align:], value)
	full := enc.EncodeToString(buf)
	first := (8*align + 5) / 6
	end := 8 * (align + len(value)) / 6
	if end <= first {
		return ""
	}
	return full[first:end]
}
