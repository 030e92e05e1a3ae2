package straittest

import (
	"io"
	"net"
	"sync"
	"time"
)

// tcpProxy forwards the connections it accepts on 127.0.0.1 to target;
// cut closes them and refuses new ones until it is undone. It stands
// between a broker and the shared etcd (the default), so that
// IsolateEtcd can cut the broker off from etcd.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	cut    bool
	closed bool
	wg     sync.WaitGroup
}

func newTCPProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// addr is where the proxy listens, host:port.
func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

// track records c unless the proxy is cut or closed.
func (p *tcpProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *tcpProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

// pipe copies between the accepted connection c and a new one to target
// until either side ends or the proxy closes them.
func (p *tcpProxy) pipe(c net.Conn) {
	defer p.wg.Done()
	u, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.untrack(c)
		return
	}
	if !p.track(u) {
		u.Close()
		p.untrack(c)
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(u, c)
		p.untrack(c, u)
		close(done)
	}()
	io.Copy(c, u)
	p.untrack(c, u)
	<-done
}

// setCut cuts (closing every connection, refusing new ones) or restores
// the path.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
			delete(p.conns, c)
		}
	}
}

// close stops the proxy and waits for its goroutines.
func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
