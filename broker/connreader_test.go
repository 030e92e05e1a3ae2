package broker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// waitHeld waits until readBufsHeld is want.
func waitHeld(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for readBufsHeld.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("read buffers held: %d, want %d", readBufsHeld.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

type frameResult struct {
	frame []byte
	err   error
}

// TestConnReaderIdleFramesSplitAcrossWrites reads frames with the
// connection reader while the peer sends them in pieces with pauses (inside
// the size, the header, the body, and between frames, including a frame
// larger than the buffer): every frame arrives whole, the reader holds no
// buffer while it waits on an empty socket, and a frame above the limit is
// refused.
func TestConnReaderIdleFramesSplitAcrossWrites(t *testing.T) {
	client, server := tcpPair(t)
	base := readBufsHeld.Load()
	var cr connReader
	cr.init(server)
	if cr.raw == nil {
		t.Fatal("a TCP connection should be read through its RawConn")
	}
	const maxSize = 1 << 20
	results := make(chan frameResult)
	go func() {
		defer cr.close()
		for {
			frame, err := protocol.ReadFrame(&cr, maxSize, nil)
			results <- frameResult{append([]byte(nil), frame...), err}
			if err != nil {
				return
			}
		}
	}()
	frameOf := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	expect := func(want []byte) {
		t.Helper()
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("read frame: %v", r.err)
			}
			if !bytes.Equal(r.frame, want) {
				t.Fatalf("frame of %d bytes, want %d", len(r.frame), len(want))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no frame")
		}
	}
	send := func(b []byte) {
		t.Helper()
		if _, err := client.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	pause := func() { time.Sleep(20 * time.Millisecond) }

	// Idle before anything is sent: no buffer.
	waitHeld(t, base)

	small := []byte("a small request body")
	f := frameOf(small)
	for _, cut := range [][]int{{1}, {2}, {3}, {4}, {2, 4, 7}, {1, 2, 3, 4, 5, 10}} {
		prev := 0
		for _, c := range cut {
			send(f[prev:c])
			pause()
			prev = c
		}
		send(f[prev:])
		expect(small)
		waitHeld(t, base)
	}

	// A frame larger than the buffer, its body read straight into the
	// frame, with pauses in it; then two frames in one write, the second
	// cut short and finished after a pause.
	big := bytes.Repeat([]byte("0123456789abcdef"), (3*readBufSize)/16+5)
	f = frameOf(big)
	send(f[:3])
	pause()
	send(f[3 : readBufSize/2])
	pause()
	send(f[readBufSize/2 : 2*readBufSize])
	pause()
	send(f[2*readBufSize:])
	expect(big)
	waitHeld(t, base)
	two := append(frameOf(small), frameOf(big)...)
	send(two[:len(small)+4+2])
	pause()
	send(two[len(small)+4+2:])
	expect(small)
	expect(big)
	waitHeld(t, base)

	// Above the limit, its size sent in two pieces: refused, nothing read.
	size := binary.BigEndian.AppendUint32(nil, maxSize+1)
	send(size[:2])
	pause()
	send(size[2:])
	r := <-results
	var tooLarge *protocol.FrameTooLargeError
	if !errors.As(r.err, &tooLarge) || tooLarge.Size != maxSize+1 {
		t.Fatalf("oversized frame: %v", r.err)
	}
	waitHeld(t, base)
}

// TestConnReaderEOFAndDeadline: a peer closing between frames is io.EOF,
// inside one io.ErrUnexpectedEOF, and a read deadline (stopReading) ends a
// read blocked on an idle connection with a timeout.
func TestConnReaderEOFAndDeadline(t *testing.T) {
	read := func(client, server net.Conn, send []byte) error {
		var cr connReader
		cr.init(server)
		defer cr.close()
		client.Write(send)
		client.Close()
		_, err := protocol.ReadFrame(&cr, 1<<20, nil)
		return err
	}
	if err := read(tcpPairWith(t, nil)); !errors.Is(err, io.EOF) {
		t.Fatalf("close between frames: %v", err)
	}
	if err := read(tcpPairWith(t, []byte{0, 0, 0, 9, 1, 2})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("close inside a frame: %v", err)
	}

	_, server := tcpPair(t)
	var cr connReader
	cr.init(server)
	defer cr.close()
	go func() {
		time.Sleep(50 * time.Millisecond)
		server.SetReadDeadline(time.Now())
	}()
	_, err := protocol.ReadFrame(&cr, 1<<20, nil)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v", err)
	}
	server.Close()
	if _, err := protocol.ReadFrame(&cr, 1<<20, nil); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

func tcpPairWith(t *testing.T, send []byte) (net.Conn, net.Conn, []byte) {
	c, s := tcpPair(t)
	return c, s, send
}

// frameReader is what the read loop reads frames from.
type frameReader interface{ Read([]byte) (int, error) }

// benchmarkFrames reads size-byte frames streamed by the peer (a
// pipelining producer: the socket is rarely empty) through the reader r
// makes.
func benchmarkFrames(b *testing.B, size int, newReader func(net.Conn) frameReader) {
	client, server := tcpPairB(b)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(size)), make([]byte, size)...)
	go func() {
		for {
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()
	r := newReader(server)
	var buf []byte
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for range b.N {
		f, err := protocol.ReadFrame(r, 1<<30, buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = f
	}
	b.StopTimer()
	server.Close()
}

// benchmarkRoundTrips reads size-byte frames from a peer that sends the
// next only once the last is acknowledged (one request in flight: the
// socket is empty before every frame).
func benchmarkRoundTrips(b *testing.B, size int, newReader func(net.Conn) frameReader) {
	client, server := tcpPairB(b)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(size)), make([]byte, size)...)
	go func() {
		ack := make([]byte, 1)
		for {
			if _, err := client.Write(frame); err != nil {
				return
			}
			if _, err := io.ReadFull(client, ack); err != nil {
				return
			}
		}
	}()
	r := newReader(server)
	var buf []byte
	ack := []byte{1}
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for range b.N {
		f, err := protocol.ReadFrame(r, 1<<30, buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = f
		if _, err := server.Write(ack); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	server.Close()
}

func tcpPairB(b *testing.B) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		b.Fatal(err)
	}
	server = <-accepted
	client.(*net.TCPConn).SetNoDelay(true)
	server.(*net.TCPConn).SetNoDelay(true)
	b.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

var (
	pooledReader = func(nc net.Conn) frameReader { cr := new(connReader); cr.init(nc); return cr }
	bufioReader  = func(nc net.Conn) frameReader { return bufio.NewReaderSize(nc, readBufSize) }
)

// The read loop's reader against the bufio.Reader it replaced.
func BenchmarkConnReaderStream16K(b *testing.B)    { benchmarkFrames(b, 16<<10, pooledReader) }
func BenchmarkBufioReaderStream16K(b *testing.B)   { benchmarkFrames(b, 16<<10, bufioReader) }
func BenchmarkConnReaderStream1M(b *testing.B)     { benchmarkFrames(b, 1<<20, pooledReader) }
func BenchmarkBufioReaderStream1M(b *testing.B)    { benchmarkFrames(b, 1<<20, bufioReader) }
func BenchmarkConnReaderRoundTrip1K(b *testing.B)  { benchmarkRoundTrips(b, 1<<10, pooledReader) }
func BenchmarkBufioReaderRoundTrip1K(b *testing.B) { benchmarkRoundTrips(b, 1<<10, bufioReader) }

// connReadLoops counts the goroutines serving connections by where they
// are: in the read loop of the goroutine they started on or resumed on
// (reading), or waiting for an idle connection on a new one (idle).
func connReadLoops() (reading, idle int) {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "broker.(*conn).readLoop("):
			reading++
		case strings.Contains(g, "broker.(*conn).resume("):
			idle++
		}
	}
	return reading, idle
}

// waitReadLoops waits until connReadLoops is (reading, idle).
func waitReadLoops(t *testing.T, reading, idle int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, i := connReadLoops()
		if r == reading && i == idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("read loops: %d reading, %d idle; want %d, %d", r, i, reading, idle)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// apiVersionsRoundTrip sends an ApiVersions v0 request on nc and reads its
// response's correlation id.
func apiVersionsRoundTrip(t *testing.T, nc net.Conn, corr int32) {
	t.Helper()
	frame := []byte{0, 0, 0, 0}
	frame = binary.BigEndian.AppendUint16(frame, uint16(kmsg.ApiVersions))
	frame = binary.BigEndian.AppendUint16(frame, 0)
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, 4)
	frame = append(frame, "test"...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, resp); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(resp)); got != corr {
		t.Fatalf("response %d, want %d", got, corr)
	}
}

// TestConnIdleHandsOffToNewGoroutine: a connection idle for idleAfter has
// its read loop go on in a new goroutine, which waits for the connection
// holding no read buffer; it answers the next request from there and goes
// idle again the same way. While new goroutines would not start on the
// smallest stack the connection stays on its goroutine (still holding no
// buffer, still answering), and moves once they would.
func TestConnIdleHandsOffToNewGoroutine(t *testing.T) {
	stackStartOverride.Store(-1)
	defer stackStartOverride.Store(0)
	srv := startSessionBroker(t)
	base := readBufsHeld.Load()
	reading0, idle0 := connReadLoops()
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	apiVersionsRoundTrip(t, nc, 1)
	time.Sleep(5 * idleAfter)
	waitReadLoops(t, reading0+1, idle0)
	waitHeld(t, base)
	apiVersionsRoundTrip(t, nc, 2)

	stackStartOverride.Store(1)
	waitReadLoops(t, reading0, idle0+1)
	waitHeld(t, base)

	for corr := int32(3); corr < 6; corr++ {
		apiVersionsRoundTrip(t, nc, corr)
		waitReadLoops(t, reading0, idle0+1)
		waitHeld(t, base)
	}

	// Closed by the client while idle: the goroutine ends.
	nc.Close()
	waitReadLoops(t, reading0, idle0)
}
