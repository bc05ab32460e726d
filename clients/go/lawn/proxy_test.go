package lawn_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// droppingProxy forwards 127.0.0.1 connections to a port; drop cuts every open one, both ways, as a lost
// network would, while it keeps listening so that clients reconnect through it.
type droppingProxy struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	conns    []net.Conn
}

func newDroppingProxy(t *testing.T, target string) *droppingProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &droppingProxy{listener: l, target: target}
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.drop()
	})
	return p
}

func (p *droppingProxy) address() string { return p.listener.Addr().String() }

func (p *droppingProxy) accept() {
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// drop closes every connection open now and returns how many client connections that was.
func (p *droppingProxy) drop() int {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return len(conns) / 2
}
