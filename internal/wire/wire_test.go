package wire

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func keys() *Keys {
	k := &Keys{Secret: secret}
	copy(k.Nonce[:], "nonce-nonce-1234")
	return k
}

func TestFrameRoundTrip(t *testing.T) {
	for _, payload := range [][]byte{nil, []byte("{}"), bytes.Repeat([]byte("x"), MaxPayload)} {
		f, err := AppendFrame(nil, keys(), ClientToServer, 7, TRound, payload)
		if err != nil {
			t.Fatal(err)
		}
		typ, got, err := ReadFrame(bytes.NewReader(f), keys(), ClientToServer, 7)
		if err != nil || typ != TRound || !bytes.Equal(got, payload) {
			t.Fatalf("round trip: %v %v len %d", typ, err, len(got))
		}
	}
}

func TestFrameRejects(t *testing.T) {
	good, _ := AppendFrame(nil, keys(), ClientToServer, 3, TStats, []byte(`{"a":1}`))
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	otherKey := &Keys{Secret: []byte("another-secret-of-32-bytes......")}
	otherKey.Nonce = keys().Nonce
	otherNonce := keys()
	otherNonce.Nonce[0] ^= 1
	tests := []struct {
		name  string
		frame []byte
		k     *Keys
		dir   Direction
		seq   uint64
		want  error
	}{
		{"bad magic", flip(0), keys(), ClientToServer, 3, ErrBadMagic},
		{"bad version", flip(2), keys(), ClientToServer, 3, ErrVersion},
		{"unknown type", append([]byte{'S', 'P', Version, 99}, good[4:]...), keys(), ClientToServer, 3, ErrType},
		{"oversized length", append([]byte{'S', 'P', Version, byte(TStats), 0x7f, 0xff, 0xff, 0xff}, good[8:]...), keys(), ClientToServer, 3, ErrTooLarge},
		{"tampered payload", flip(HeaderSize + 1), keys(), ClientToServer, 3, ErrAuth},
		{"tampered mac", flip(len(good) - 1), keys(), ClientToServer, 3, ErrAuth},
		{"wrong secret", good, otherKey, ClientToServer, 3, ErrAuth},
		{"other connection", good, otherNonce, ClientToServer, 3, ErrAuth},
		{"replayed later", good, keys(), ClientToServer, 4, ErrAuth},
		{"reflected", good, keys(), ServerToClient, 3, ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadFrame(bytes.NewReader(tt.frame), tt.k, tt.dir, tt.seq)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := AppendFrame(nil, &Keys{Secret: []byte("short")}, ClientToServer, 0, TOK, nil); !errors.Is(err, ErrShortKey) {
		t.Errorf("short key: %v", err)
	}
	if _, err := AppendFrame(nil, keys(), ClientToServer, 0, TOK, make([]byte, MaxPayload+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("large payload: %v", err)
	}
}

func pipe(t *testing.T, serverSecret, clientSecret []byte) (*Conn, *Conn, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   *Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{nil, err}
			return
		}
		s, err := Server(c, serverSecret)
		ch <- res{s, err}
	}()
	cl, cerr := Dial(ln.Addr().String(), clientSecret, time.Second)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.c.Close() })
	if cl != nil {
		t.Cleanup(func() { cl.Close() })
	}
	return r.c, cl, cerr
}

func TestConnCall(t *testing.T) {
	srv, cl, err := pipe(t, secret, secret)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			typ, p, err := srv.Recv(-1)
			if err != nil {
				return
			}
			switch typ {
			case TStats:
				srv.Send(TStatsReply, Stats{Service: "cart", Calls: uint64(len(p))})
			default:
				srv.Send(TError, ErrorMsg{Error: "nope"})
			}
		}
	}()
	for i := 0; i < 3; i++ {
		var st Stats
		if err := cl.Call(TStats, nil, &st); err != nil || st.Service != "cart" {
			t.Fatalf("call %d: %v %+v", i, err, st)
		}
	}
	if err := cl.Call(TStart, nil, nil); !errors.Is(err, ErrRemote) {
		t.Fatalf("want remote error, got %v", err)
	}
}

func TestHandshakeWrongSecret(t *testing.T) {
	_, _, err := pipe(t, secret, []byte("not-the-experiment-secret-at-all"))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("client with the wrong secret: %v, want ErrAuth", err)
	}
}

func TestServerRejectsForgedFrame(t *testing.T) {
	srv, cl, err := pipe(t, secret, secret)
	if err != nil {
		t.Fatal(err)
	}
	// A client that knows the nonce but not the secret.
	forged := &Keys{Secret: []byte("attacker-secret-attacker-secret!"), Nonce: cl.keys.Nonce}
	f, _ := AppendFrame(nil, forged, ClientToServer, 0, TStop, nil)
	cl.c.Write(f)
	if _, _, err := srv.Recv(time.Second); !errors.Is(err, ErrAuth) {
		t.Fatalf("forged frame: %v, want ErrAuth", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	good, _ := AppendFrame(nil, keys(), ClientToServer, 0, TConfigure, []byte(`{"epoch":1}`))
	f.Add(good)
	f.Add([]byte("SP\x01\x02\x00\x00\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, p, err := ReadFrame(bytes.NewReader(data), keys(), ClientToServer, 0)
		if err != nil {
			return
		}
		// Anything accepted must re-encode to the same bytes.
		again, err := AppendFrame(nil, keys(), ClientToServer, 0, typ, p)
		if err != nil || !bytes.Equal(again, data[:len(again)]) {
			t.Fatalf("accepted frame does not round-trip: %v", err)
		}
	})
}

// lateConn is a real connection whose first write comes a while after it
// is asked for, as on a machine whose CPUs are all busy.
type lateConn struct {
	net.Conn
	late time.Duration
	once bool
}

func (c *lateConn) Write(p []byte) (int, error) {
	if !c.once {
		c.once = true
		time.Sleep(c.late)
	}
	return c.Conn.Write(p)
}

// TestSendLateWrite: a Send whose deadline passed before its write was
// even tried (nothing written) tries once more, and the frame arrives,
// in sequence; the connection goes on.
func TestSendLateWrite(t *testing.T) {
	srv, cl, err := pipe(t, secret, secret)
	if err != nil {
		t.Fatal(err)
	}
	cl.c = &lateConn{Conn: cl.c, late: 30 * time.Millisecond}
	cl.Timeout = 10 * time.Millisecond
	for i := range 2 {
		if err := cl.Send(TRenew, nil); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if typ, _, err := srv.Recv(time.Second); err != nil || typ != TRenew {
			t.Fatalf("frame %d: %v, %v", i, typ, err)
		}
	}
}
