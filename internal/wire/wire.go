package wire

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Version is the protocol version carried in every frame.
const Version = 1

// Frame layout limits.
const (
	HeaderSize = 8
	MACSize    = sha256.Size
	NonceSize  = 16
	MaxPayload = 256 << 10
	MinSecret  = 16
)

var magic = [2]byte{'S', 'P'}

// Type identifies a message.
type Type uint8

// Message types. Requests from the orchestrator get OK, Error or StatsReply.
const (
	THello Type = iota + 1
	TStats
	TStatsReply
	TConfigure
	TStart
	TStop
	TReset
	TOK
	TError
	TRound
	TPool
	TLatency
	TRenew
)

var typeNames = map[Type]string{
	THello: "hello", TStats: "stats", TStatsReply: "stats-reply", TConfigure: "configure",
	TStart: "start", TStop: "stop", TReset: "reset", TOK: "ok", TError: "error", TRound: "round",
	TPool: "pool", TLatency: "latency", TRenew: "renew",
}

func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

func (t Type) valid() bool { _, ok := typeNames[t]; return ok }

// Direction of a frame on a connection; part of the MAC so a frame cannot be
// reflected back to its sender.
type Direction byte

// Directions.
const (
	ServerToClient Direction = 's'
	ClientToServer Direction = 'c'
)

// Errors returned by ReadFrame.
var (
	ErrBadMagic   = errors.New("wire: not a slowpoke frame")
	ErrVersion    = errors.New("wire: unsupported protocol version")
	ErrType       = errors.New("wire: unknown message type")
	ErrTooLarge   = errors.New("wire: payload too large")
	ErrAuth       = errors.New("wire: authentication failed")
	ErrShortKey   = fmt.Errorf("wire: secret must be at least %d bytes", MinSecret)
	ErrRemote     = errors.New("wire: peer reported an error")
	ErrUnexpected = errors.New("wire: unexpected message type")
)

// Keys identify one direction of one connection.
type Keys struct {
	Secret []byte
	Nonce  [NonceSize]byte
}

func (k *Keys) mac(dir Direction, seq uint64, header, payload []byte) []byte {
	m := hmac.New(sha256.New, k.Secret)
	var pre [1 + NonceSize + 8]byte
	pre[0] = byte(dir)
	copy(pre[1:], k.Nonce[:])
	binary.BigEndian.PutUint64(pre[1+NonceSize:], seq)
	m.Write(pre[:])
	m.Write(header)
	m.Write(payload)
	return m.Sum(nil)
}

// AppendFrame appends one authenticated frame to dst.
func AppendFrame(dst []byte, k *Keys, dir Direction, seq uint64, t Type, payload []byte) ([]byte, error) {
	if len(k.Secret) < MinSecret {
		return dst, ErrShortKey
	}
	if len(payload) > MaxPayload {
		return dst, ErrTooLarge
	}
	if !t.valid() {
		return dst, ErrType
	}
	var h [HeaderSize]byte
	h[0], h[1], h[2], h[3] = magic[0], magic[1], Version, byte(t)
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	dst = append(dst, h[:]...)
	dst = append(dst, payload...)
	return append(dst, k.mac(dir, seq, h[:], payload)...), nil
}

// ReadFrame reads and authenticates one frame. It reads at most
// HeaderSize+MaxPayload+MACSize bytes and never allocates more than the
// declared (bounded) payload.
func ReadFrame(r io.Reader, k *Keys, dir Direction, seq uint64) (Type, []byte, error) {
	return readFrame(r, k, dir, seq, MaxPayload)
}

// readFrame is ReadFrame with a payload limit of its own: a frame that
// declares more is refused on its header, before any of it is read.
func readFrame(r io.Reader, k *Keys, dir Direction, seq uint64, limit uint32) (Type, []byte, error) {
	var h [HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if h[0] != magic[0] || h[1] != magic[1] {
		return 0, nil, ErrBadMagic
	}
	if h[2] != Version {
		return 0, nil, fmt.Errorf("%w %d (this side speaks %d)", ErrVersion, h[2], Version)
	}
	t := Type(h[3])
	if !t.valid() {
		return 0, nil, fmt.Errorf("%w %d", ErrType, h[3])
	}
	n := binary.BigEndian.Uint32(h[4:])
	if n > limit {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	buf := make([]byte, int(n)+MACSize)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	payload, mac := buf[:n], buf[n:]
	if len(k.Secret) < MinSecret || !hmac.Equal(mac, k.mac(dir, seq, h[:], payload)) {
		return 0, nil, ErrAuth
	}
	return t, payload, nil
}

// Conn is an authenticated message connection. Send is safe for concurrent
// use; Recv must be called from one goroutine at a time.
type Conn struct {
	c       net.Conn
	r       *bufio.Reader
	keys    Keys
	in, out Direction
	wmu     sync.Mutex
	sendSeq uint64
	recvSeq uint64
	wbuf    []byte

	// Timeout bounds each Send and each Recv (0: no deadline).
	Timeout time.Duration
}

// DefaultTimeout bounds the handshake and, unless changed, each message.
const DefaultTimeout = 5 * time.Second

// Server performs the server side of the handshake on an accepted
// connection: it sends a hello with a fresh nonce.
func Server(c net.Conn, secret []byte) (*Conn, error) {
	if len(secret) < MinSecret {
		return nil, ErrShortKey
	}
	w := &Conn{c: c, r: bufio.NewReader(c), in: ClientToServer, out: ServerToClient, Timeout: DefaultTimeout}
	w.keys.Secret = secret
	if _, err := rand.Read(w.keys.Nonce[:]); err != nil {
		return nil, err
	}
	hello, _ := json.Marshal(helloMsg{Version: Version, Nonce: w.keys.Nonce[:]})
	// The hello's MAC uses the nonce it carries, sequence 0.
	if err := w.sendRaw(THello, hello); err != nil {
		return nil, err
	}
	return w, nil
}

type helloMsg struct {
	Version int    `json:"version"`
	Nonce   []byte `json:"nonce"`
}

// Client performs the client side of the handshake: it reads the server's
// hello, checks its MAC, and adopts its nonce.
func Client(c net.Conn, secret []byte) (*Conn, error) {
	if len(secret) < MinSecret {
		return nil, ErrShortKey
	}
	w := &Conn{c: c, r: bufio.NewReader(c), in: ServerToClient, out: ClientToServer, Timeout: DefaultTimeout}
	w.keys.Secret = secret
	c.SetReadDeadline(time.Now().Add(DefaultTimeout))
	// The hello is read before the nonce is known: peek its payload for the
	// nonce, then authenticate the whole frame with it.
	var h [HeaderSize]byte
	if _, err := io.ReadFull(w.r, h[:]); err != nil {
		return nil, fmt.Errorf("wire: reading hello: %w", err)
	}
	if h[0] != magic[0] || h[1] != magic[1] {
		return nil, ErrBadMagic
	}
	if h[2] != Version {
		return nil, fmt.Errorf("%w %d (this side speaks %d)", ErrVersion, h[2], Version)
	}
	n := binary.BigEndian.Uint32(h[4:])
	if Type(h[3]) != THello || n > 1024 {
		return nil, fmt.Errorf("wire: expected hello, got %v", Type(h[3]))
	}
	buf := make([]byte, int(n)+MACSize)
	if _, err := io.ReadFull(w.r, buf); err != nil {
		return nil, fmt.Errorf("wire: reading hello: %w", err)
	}
	var hm helloMsg
	if err := json.Unmarshal(buf[:n], &hm); err != nil || len(hm.Nonce) != NonceSize {
		return nil, errors.New("wire: malformed hello")
	}
	copy(w.keys.Nonce[:], hm.Nonce)
	if !hmac.Equal(buf[n:], w.keys.mac(ServerToClient, 0, h[:], buf[:n])) {
		return nil, ErrAuth
	}
	w.recvSeq = 1
	return w, nil
}

// Dial connects to a server and performs the handshake.
func Dial(addr string, secret []byte, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	w, err := Client(c, secret)
	if err != nil {
		c.Close()
		return nil, err
	}
	return w, nil
}

// Close closes the underlying connection.
func (w *Conn) Close() error { return w.c.Close() }

// RemoteAddr is the peer's address.
func (w *Conn) RemoteAddr() net.Addr { return w.c.RemoteAddr() }

func (w *Conn) sendRaw(t Type, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	var err error
	w.wbuf, err = AppendFrame(w.wbuf[:0], &w.keys, w.out, w.sendSeq, t, payload)
	if err != nil {
		return err
	}
	if w.Timeout > 0 {
		w.c.SetWriteDeadline(time.Now().Add(w.Timeout))
	}
	n, err := w.c.Write(w.wbuf)
	if n == 0 && w.Timeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		// Nothing written: the deadline may have passed before the write
		// was even tried (this goroutine waiting for a CPU on a busy
		// machine), not while the peer's window was full. The
		// connection is intact: once more, with a fresh deadline.
		w.c.SetWriteDeadline(time.Now().Add(w.Timeout))
		_, err = w.c.Write(w.wbuf)
	}
	if err != nil {
		return err
	}
	w.sendSeq++
	return nil
}

// Send sends a message whose payload is v encoded as JSON (nil: empty).
func (w *Conn) Send(t Type, v any) error {
	var payload []byte
	if v != nil {
		var err error
		if payload, err = json.Marshal(v); err != nil {
			return err
		}
	}
	return w.sendRaw(t, payload)
}

// Recv receives one authenticated message. A zero timeout argument uses
// w.Timeout; a negative one waits forever.
func (w *Conn) Recv(timeout time.Duration) (Type, []byte, error) {
	return w.RecvLimit(timeout, MaxPayload)
}

// RecvLimit is Recv for a frame of at most limit payload bytes: a server
// reads a peer's first frame, before the peer has authenticated, with a
// small limit.
func (w *Conn) RecvLimit(timeout time.Duration, limit uint32) (Type, []byte, error) {
	if timeout == 0 {
		timeout = w.Timeout
	}
	if timeout > 0 {
		w.c.SetReadDeadline(time.Now().Add(timeout))
	} else {
		w.c.SetReadDeadline(time.Time{})
	}
	t, p, err := readFrame(w.r, &w.keys, w.in, w.recvSeq, min(limit, MaxPayload))
	if err != nil {
		return 0, nil, err
	}
	w.recvSeq++
	return t, p, nil
}

// ErrorMsg is the payload of TError.
type ErrorMsg struct {
	Error string `json:"error"`
}

// Call sends a request and decodes the reply into resp (which may be nil).
// A TError reply becomes an error wrapping ErrRemote.
func (w *Conn) Call(t Type, req, resp any) error {
	if err := w.Send(t, req); err != nil {
		return err
	}
	rt, p, err := w.Recv(0)
	if err != nil {
		return err
	}
	switch rt {
	case TError:
		var e ErrorMsg
		json.Unmarshal(p, &e)
		return fmt.Errorf("%w: %s", ErrRemote, e.Error)
	case TOK, TStatsReply:
		if resp != nil && len(p) > 0 {
			return json.Unmarshal(p, resp)
		}
		return nil
	default:
		return fmt.Errorf("%w %v", ErrUnexpected, rt)
	}
}
