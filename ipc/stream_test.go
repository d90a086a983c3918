package ipc

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc/internal/pb"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// handlerFunc adapts a function to Handler.
type handlerFunc func(*WorkerStream) error

func (f handlerFunc) Attempt(s *WorkerStream) error { return f(s) }

// inMemory serves h over an in-memory connection, without a process or a
// handshake, and returns a client of it.
func inMemory(t *testing.T, h Handler) pb.WorkerClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	pb.RegisterWorkerServer(srv, &workerServer{handler: h, watch: newHostWatch(), infoVersion: ProtocolVersion})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewWorkerClient(conn)
}

// TestTypedMessagesRoundTrip sends every host and worker message kind over
// a real gRPC stream and checks each arrives as it was sent.
func TestTypedMessagesRoundTrip(t *testing.T) {
	t.Parallel()
	usage := model.Usage{Input: 10, Output: 2, CacheRead: 3, CacheWrite: 4, Incomplete: true}
	rec := &session.TaskRecord{Version: 1, AttemptID: session.NewID(), TaskToolCallID: "call-1", ParentSessionID: session.NewID(),
		ChildID: session.NewID(), Launched: true, Cwd: "/work", Status: session.StatusTimeout, Turns: 2, Usage: &usage}
	host := []HostMsg{
		Run{Spec: AttemptSpec{InkHome: "/h", Transcript: "/h/t.jsonl", AttemptID: "a", SessionID: "s", Label: "main",
			Binding: model.Binding{Provider: "script", Model: "/s.yaml"}, Cwd: "/w", Root: "/w", Prompt: "go", Tools: []string{"read"},
			Credentials: map[string]string{"OPENAI_API_KEY": "k"}}},
		Cancel{Status: session.StatusTimeout, Reason: "timed out after 2s"},
		TaskAnswer{CorrelationID: "c1", Content: "done", IsError: true, Record: rec},
		TaskAnswer{CorrelationID: "c2", Content: "no record"},
		Budget{Remaining: -12},
		TaskAnswer{CorrelationID: "c3", Content: "2 ended", Records: []session.TaskRecord{*rec, *rec}},
		TaskAnswer{CorrelationID: "c4", Content: "1 still running", Running: []string{"01abc"}},
		Cancel{Status: session.StatusInterrupted, Reason: HostLost},
		Ack{},
	}
	worker := []WorkerMsg{
		Event{Seq: 1, Body: event.TurnStart{Turn: 1}},
		Event{Seq: 2, Body: event.Message{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "hi"}}}}},
		TaskRequest{CorrelationID: "c1", ToolCallID: "call-1", Args: json.RawMessage(`{"prompt":"p"}`)},
		TaskRequest{CorrelationID: "c2", ToolCallID: "call-2", Args: json.RawMessage(`{"ids":["01abc"]}`), Op: OpWait},
		Outcome{Status: session.StatusRefused, Code: session.CodeHeaderChanged, Reason: "the transcript changed since it was validated", AttemptID: "a", Epoch: 7},
		Outcome{Status: session.StatusCompleted, Reason: "", Text: "all done", Turns: 3, Usage: usage, AttemptID: "a", Epoch: 7, Health: []string{"h1"}, Capped: "turns"},
	}
	got := make(chan []HostMsg, 1)
	client := inMemory(t, handlerFunc(func(s *WorkerStream) error {
		var in []HostMsg
		for range host {
			m, err := s.Recv()
			if err != nil {
				return err
			}
			in = append(in, m)
		}
		got <- in
		for _, m := range worker {
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := client.Attempt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hs := &HostStream{s: raw}
	for _, m := range host {
		if err := hs.Send(m); err != nil {
			t.Fatalf("Send %T: %v", m, err)
		}
	}
	if in := <-got; !reflect.DeepEqual(in, host) {
		t.Fatalf("the worker received\n%#v\nwant\n%#v", in, host)
	}
	for _, want := range worker {
		m, err := hs.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("the host received %#v, want %#v", m, want)
		}
	}
}

// TestUnknownMessagesAreErrors: a message outside the closed sets is an
// error on both sides, never silently dropped.
func TestUnknownMessagesAreErrors(t *testing.T) {
	t.Parallel()
	if _, err := hostToPB(nil); err == nil {
		t.Error("hostToPB(nil) succeeded")
	}
	if _, err := workerToPB(Event{Seq: 1}); err == nil {
		t.Error("an event without a body was encoded")
	}
	if _, err := workerFromPB(&pb.WorkerMsg{Msg: &pb.WorkerMsg_Event{Event: &pb.Event{Seq: 1, Type: "tool.exploded"}}}); err == nil {
		t.Error("an event of an unknown kind was decoded")
	}
	if _, err := hostFromPB(&pb.HostMsg{}); err == nil {
		t.Error("an empty host message was decoded")
	}
	if _, err := hostFromPB(&pb.HostMsg{Msg: &pb.HostMsg_Answer{Answer: &pb.TaskAnswer{Record: []byte(`{"bogus":1}`)}}}); err == nil {
		t.Error("an answer with a malformed record was decoded")
	}
}

// TestStatusesOnTheWire: every status an outcome or a cancel may carry, and
// every refusal code, crosses the wire as an enum and comes back the same;
// what may not travel is refused on the sending side, and a value the
// receiver does not know (unspecified, or from another version) is an
// error naming it, never passed on.
func TestStatusesOnTheWire(t *testing.T) {
	t.Parallel()
	for _, st := range session.Statuses {
		o := Outcome{Status: st, AttemptID: "a"}
		if st == session.StatusRefused {
			o.Code = session.CodeStillRunning
		}
		m, err := workerToPB(o)
		if (err == nil) != (st.EndsAttempt() || st == session.StatusRefused) {
			t.Errorf("outcome %s: encode error %v", st, err)
			continue
		}
		if err == nil {
			back, err := workerFromPB(m)
			if err != nil || !reflect.DeepEqual(back, o) {
				t.Errorf("outcome %s came back as %#v, %v", st, back, err)
			}
			if got := m.GetOutcome().GetStatus().String(); got != "STATUS_"+strings.ToUpper(string(st)) {
				t.Errorf("outcome %s travels as %s", st, got)
			}
		}
		h, err := hostToPB(Cancel{Status: st, Reason: "r"})
		if (err == nil) != CancelStatus(st) {
			t.Errorf("cancel %s: encode error %v", st, err)
			continue
		}
		if err == nil {
			if back, err := hostFromPB(h); err != nil || back != (Cancel{Status: st, Reason: "r"}) {
				t.Errorf("cancel %s came back as %#v, %v", st, back, err)
			}
		}
	}
	for _, c := range session.RefusalCodes {
		m, err := workerToPB(Outcome{Status: session.StatusRefused, Code: c, Reason: "why"})
		if err != nil {
			t.Fatalf("refusal %s: %v", c, err)
		}
		if got := m.GetOutcome().GetCode().String(); got != "REFUSAL_CODE_"+strings.ToUpper(strings.ReplaceAll(string(c), "-", "_")) {
			t.Errorf("refusal code %s travels as %s", c, got)
		}
		if back, err := workerFromPB(m); err != nil || back.(Outcome).Code != c || back.(Outcome).Reason != "why" {
			t.Errorf("refusal %s came back as %#v, %v", c, back, err)
		}
	}
	for _, c := range []session.Cap{"", session.CappedTurns, session.CappedBudget} {
		m, err := workerToPB(Outcome{Status: session.StatusCompleted, Capped: c})
		if err != nil {
			t.Fatalf("cap %q: %v", c, err)
		}
		if back, err := workerFromPB(m); err != nil || back.(Outcome).Capped != c {
			t.Errorf("cap %q came back as %#v, %v", c, back, err)
		}
	}
	if _, err := workerToPB(Outcome{Status: session.StatusCompleted, Capped: "tokens"}); err == nil || !strings.Contains(err.Error(), `outcome has cap "tokens"`) {
		t.Errorf("an unknown cap was sent: %v", err)
	}
	if _, err := workerFromPB(&pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{Status: pb.Status_STATUS_COMPLETED, Capped: 7}}}); err == nil || !strings.Contains(err.Error(), "decode outcome: unknown cap 7 on the wire") {
		t.Errorf("an unknown cap was decoded: %v", err)
	}
	if len(capToPB) != len(pb.Cap_name) {
		t.Errorf("the Cap enum of worker.proto has %d values, convert.go maps %d", len(pb.Cap_name), len(capToPB))
	}
	if len(statusToPB) != len(pb.Status_name)-1 || len(codeToPB) != len(pb.RefusalCode_name)-1 {
		t.Errorf("the enums of worker.proto and the maps of convert.go differ: %d/%d statuses, %d/%d codes",
			len(statusToPB), len(pb.Status_name)-1, len(codeToPB), len(pb.RefusalCode_name)-1)
	}

	for _, tc := range []struct {
		name string
		out  Outcome
		want string
	}{
		{"refused without a code", Outcome{Status: session.StatusRefused, Reason: "busy"}, `refused outcome has refusal code ""`},
		{"a code on a completion", Outcome{Status: session.StatusCompleted, Code: session.CodeMalformed}, `completed outcome carries refusal code "malformed"`},
		{"a lookup code", Outcome{Status: session.StatusRefused, Code: session.CodeNotOwned}, `refusal code "not-owned", want one of still-running, malformed, header-changed, create-failed`},
		{"no status", Outcome{}, `outcome has status ""`},
	} {
		if _, err := workerToPB(tc.out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: encode error %v, want %q", tc.name, err, tc.want)
		}
	}

	for _, tc := range []struct {
		name string
		msg  *pb.WorkerMsg
		want string
	}{
		{"unspecified status", &pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{}}}, "decode outcome: no status"},
		{"a status from another version", &pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{Status: 42}}}, "decode outcome: unknown status 42 on the wire"},
		{"a code from another version", &pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{Status: pb.Status_STATUS_REFUSED, Code: 9}}}, "decode outcome: unknown refusal code 9 on the wire"},
		{"refused without a code", &pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{Status: pb.Status_STATUS_REFUSED}}}, `decode outcome: refused outcome has refusal code ""`},
		{"a code on a crash", &pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{Status: pb.Status_STATUS_CRASH, Code: pb.RefusalCode_REFUSAL_CODE_MALFORMED}}}, `crash outcome carries refusal code "malformed"`},
	} {
		if _, err := workerFromPB(tc.msg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: decode error %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		st   pb.Status
		want string
	}{
		{"unspecified", pb.Status_STATUS_UNSPECIFIED, "decode cancel: no status"},
		{"unknown", 42, "decode cancel: unknown status 42"},
		{"refused", pb.Status_STATUS_REFUSED, "decode cancel: status refused cannot stop an attempt"},
		{"completed", pb.Status_STATUS_COMPLETED, "decode cancel: status completed cannot stop an attempt"},
	} {
		if _, err := hostFromPB(&pb.HostMsg{Msg: &pb.HostMsg_Cancel{Cancel: &pb.Cancel{Status: tc.st}}}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cancel %s: decode error %v, want %q", tc.name, err, tc.want)
		}
	}
}
