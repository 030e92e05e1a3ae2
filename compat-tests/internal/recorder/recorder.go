// Package recorder owns the recording proxy of the differential conformance
// harness (compat-tests/reference): a TCP proxy on 127.0.0.1 between real
// Kafka clients and one broker that writes every request frame, and the
// response it got, to a recording file, and the reading and writing of that
// file. The harness replays recordings against Apache Kafka 4.4 and Strait
// (compat-tests/reference/conformance_replay_test.go).
//
// # Recording format
//
// A recording is JSON lines. The first line is a Header
// ({"format":"strait-recording/1", ...}); every other line is one Frame, in
// the order the proxy read the requests (seq, counted over all
// connections):
//
//	{"seq":12,"conn":3,"at_ms":840,"key":3,"version":12,"client_id":"kgo",
//	 "correlation":4,"request":"<base64>","response":"<base64>"}
//
// conn numbers the client's connections in the order they were accepted;
// at_ms is the time since the recording started; request is the request
// body after the request header (after its tagged fields where the header
// is flexible), response the response body after the response header, as
// the broker sent it (before the proxy's host rewriting), absent when the
// request has no response (Produce with acks=0) or the connection closed
// first. client_id is absent when the client sent a null client id.
//
// # Host rewriting
//
// So that clients keep talking through the proxy, responses that name
// brokers (Metadata, FindCoordinator, DescribeCluster, and the
// NodeEndpoints of Produce, Fetch and the share keys) are decoded with kmsg
// and every (Host, Port) pair in them is replaced by the proxy's own
// address. The proxy fronts a single broker: all node ids point at it.
package recorder

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Format is the value of Header.Format this package writes and reads.
const Format = "strait-recording/1"

// maxFrame bounds a frame either way (Kafka's socket.request.max.bytes).
const maxFrame = 100 << 20

// Header is the first line of a recording.
type Header struct {
	Format     string    `json:"format"`
	Session    string    `json:"session"`
	Upstream   string    `json:"upstream,omitempty"` // what the broker was, e.g. "Apache Kafka 4.4.0"
	RecordedAt time.Time `json:"recorded_at"`
}

// Frame is one request and its response.
type Frame struct {
	Seq         int     `json:"seq"`
	Conn        int     `json:"conn"`
	AtMillis    int64   `json:"at_ms"`
	Key         int16   `json:"key"`
	Version     int16   `json:"version"`
	ClientID    *string `json:"client_id,omitempty"`
	Correlation int32   `json:"correlation"`
	Request     []byte  `json:"request"`
	Response    []byte  `json:"response,omitempty"`
}

// Recording is a header and its frames in seq order.
type Recording struct {
	Header Header
	Frames []Frame
}

// Write writes r to path in the recording format.
func (r *Recording) Write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	if err := enc.Encode(r.Header); err != nil {
		f.Close()
		return err
	}
	for i := range r.Frames {
		if err := enc.Encode(&r.Frames[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Read reads a recording written by Write.
func Read(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	var r Recording
	if err := dec.Decode(&r.Header); err != nil {
		return nil, fmt.Errorf("%s: header: %v", path, err)
	}
	if r.Header.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q", path, r.Header.Format, Format)
	}
	for {
		var fr Frame
		if err := dec.Decode(&fr); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: frame %d: %v", path, len(r.Frames)+1, err)
		}
		r.Frames = append(r.Frames, fr)
	}
	return &r, nil
}

// Proxy listens on 127.0.0.1 and forwards every connection to the upstream
// broker, recording what passes.
type Proxy struct {
	ln       net.Listener
	upstream string
	host     string
	port     int32
	start    time.Time

	mu     sync.Mutex
	frames []Frame
	conns  int
	open   map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// Listen starts a proxy to upstream on a free 127.0.0.1 port.
func Listen(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p64, _ := strconv.ParseInt(port, 10, 32)
	p := &Proxy{ln: ln, upstream: upstream, host: host, port: int32(p64), start: time.Now(), open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
		if err != nil {
			slog.Warn("recorder: dialing the upstream broker", "upstream", p.upstream, "err", err)
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns++
		id := p.conns
		p.open[c], p.open[up] = true, true
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(id, c, up)
	}
}

// pending is a request awaiting its response: the index of its frame.
type pending struct {
	corr    int32
	key     int16
	version int16
	frame   int
}

func (p *Proxy) serve(id int, c, up net.Conn) {
	defer p.wg.Done()
	var mu sync.Mutex
	var inflight []pending
	done := make(chan struct{})
	go func() { // broker to client
		defer close(done)
		rd := bufio.NewReader(up)
		for {
			body, err := readFrame(rd)
			if err != nil {
				c.Close()
				return
			}
			if len(body) < 4 {
				c.Close()
				return
			}
			corr := int32(binary.BigEndian.Uint32(body))
			mu.Lock()
			var pd pending
			found := false
			for len(inflight) > 0 && !found {
				pd, inflight = inflight[0], inflight[1:]
				found = pd.corr == corr
			}
			mu.Unlock()
			out := body
			if found {
				hdr := 4
				if flexibleResponseHeader(pd.key, pd.version) {
					hdr = 5 // an empty tag section; clients send no header tags to ask for any
				}
				if len(body) >= hdr {
					p.mu.Lock()
					p.frames[pd.frame].Response = append([]byte(nil), body[hdr:]...)
					p.mu.Unlock()
					if r := p.rewriteHosts(pd.key, pd.version, body[:hdr], body[hdr:]); r != nil {
						out = r
					}
				}
			}
			if err := writeFrame(c, out); err != nil {
				up.Close()
				return
			}
		}
	}()
	rd := bufio.NewReader(c)
	for {
		body, err := readFrame(rd)
		if err != nil {
			break
		}
		if fr, ok := p.parseRequest(id, body); ok {
			p.mu.Lock()
			fr.Seq = len(p.frames) + 1
			p.frames = append(p.frames, fr)
			idx := len(p.frames) - 1
			p.mu.Unlock()
			if expectsResponse(fr) {
				mu.Lock()
				inflight = append(inflight, pending{fr.Correlation, fr.Key, fr.Version, idx})
				mu.Unlock()
			}
		}
		if err := writeFrame(up, body); err != nil {
			break
		}
	}
	up.Close()
	<-done
	c.Close()
	p.mu.Lock()
	delete(p.open, c)
	delete(p.open, up)
	p.mu.Unlock()
}

// parseRequest splits a request frame into its header fields and body.
func (p *Proxy) parseRequest(conn int, b []byte) (Frame, bool) {
	if len(b) < 10 {
		return Frame{}, false
	}
	fr := Frame{
		Conn:        conn,
		AtMillis:    time.Since(p.start).Milliseconds(),
		Key:         int16(binary.BigEndian.Uint16(b)),
		Version:     int16(binary.BigEndian.Uint16(b[2:])),
		Correlation: int32(binary.BigEndian.Uint32(b[4:])),
	}
	n := int16(binary.BigEndian.Uint16(b[8:]))
	rest := b[10:]
	if n >= 0 {
		if int(n) > len(rest) {
			return Frame{}, false
		}
		s := string(rest[:n])
		fr.ClientID = &s
		rest = rest[n:]
	}
	if flexibleRequest(fr.Key, fr.Version) {
		var ok bool
		if rest, ok = skipTags(rest); !ok {
			return Frame{}, false
		}
	}
	fr.Request = append([]byte(nil), rest...)
	return fr, true
}

// expectsResponse: every request but Produce with acks=0.
func expectsResponse(fr Frame) bool {
	if fr.Key != int16(kmsg.Produce) {
		return true
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(fr.Version)
	if err := req.ReadFrom(fr.Request); err != nil {
		return true
	}
	return req.Acks != 0
}

// hostKeys are the responses that name brokers.
var hostKeys = map[int16]bool{
	int16(kmsg.Produce): true, int16(kmsg.Fetch): true, int16(kmsg.Metadata): true,
	int16(kmsg.FindCoordinator): true, int16(kmsg.DescribeCluster): true,
	int16(kmsg.ShareFetch): true, int16(kmsg.ShareAcknowledge): true,
}

// rewriteHosts returns the response frame with every broker address
// replaced by the proxy's, or nil to forward it as it came.
func (p *Proxy) rewriteHosts(key, version int16, hdr, body []byte) []byte {
	if !hostKeys[key] {
		return nil
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		slog.Warn("recorder: a response naming brokers could not be decoded; forwarded as is", "key", kmsg.NameForKey(key), "version", version, "err", err)
		return nil
	}
	if !setHosts(reflect.ValueOf(resp), p.host, p.port) {
		return nil
	}
	return resp.AppendTo(append([]byte(nil), hdr...))
}

// setHosts replaces the Host and Port of every struct that has both.
func setHosts(v reflect.Value, host string, port int32) bool {
	changed := false
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			changed = setHosts(v.Elem(), host, port)
		}
	case reflect.Struct:
		h, pt := v.FieldByName("Host"), v.FieldByName("Port")
		if h.IsValid() && pt.IsValid() && h.Kind() == reflect.String && pt.Kind() == reflect.Int32 && h.String() != "" {
			h.SetString(host)
			pt.SetInt(int64(port))
			changed = true
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && setHosts(v.Field(i), host, port) {
				changed = true
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false
		}
		for i := 0; i < v.Len(); i++ {
			if setHosts(v.Index(i), host, port) {
				changed = true
			}
		}
	}
	return changed
}

// Close stops the proxy, closes every connection and returns what it
// recorded.
func (p *Proxy) Close() []Frame {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Frame(nil), p.frames...)
}

// Frames returns what was recorded so far.
func (p *Proxy) Frames() []Frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Frame, len(p.frames))
	copy(out, p.frames)
	return out
}

func readFrame(rd *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(rd, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxFrame {
		return nil, errors.New("frame too large")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(rd, b)
	return b, err
}

func writeFrame(w io.Writer, b []byte) error {
	out := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(out, uint32(len(b)))
	_, err := w.Write(append(out, b...))
	return err
}

// flexibleRequest: whether the request header is version 2 (with tags).
func flexibleRequest(key, version int16) bool {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return false
	}
	req.SetVersion(version)
	return req.IsFlexible()
}

// flexibleResponseHeader: whether the response header has a tag section
// (ApiVersions' never does, so that any client can read it).
func flexibleResponseHeader(key, version int16) bool {
	return key != int16(kmsg.ApiVersions) && flexibleRequest(key, version)
}

// skipTags skips a tag section: a count, then (tag, size, bytes) each.
func skipTags(b []byte) ([]byte, bool) {
	n, b, ok := uvarint(b)
	if !ok {
		return nil, false
	}
	for i := uint64(0); i < n; i++ {
		if _, b, ok = uvarint(b); !ok {
			return nil, false
		}
		var size uint64
		if size, b, ok = uvarint(b); !ok || size > uint64(len(b)) {
			return nil, false
		}
		b = b[size:]
	}
	return b, true
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}
