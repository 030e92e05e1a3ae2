package broker

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// sendFileRegion writes length bytes of f starting at pos to nc. On a plain
// TCP connection on Linux this is sendfile(2) with an explicit offset, so the
// file position is never shared between concurrent readers and no byte passes
// through user space. Anything else copies through a buffer (copyFileRegion).
func sendFileRegion(nc net.Conn, f *os.File, pos, length int64) error {
	if tc, ok := nc.(*net.TCPConn); ok {
		return sendfileTCP(tc, f, pos, length)
	}
	return copyFileRegion(nc, f, pos, length)
}

// copyFileRegion writes length bytes of f starting at pos to w (a TLS
// connection's write buffer: bufio.Writer reads the file straight into
// its buffer, so no other buffer is allocated). A file shorter than the
// region is an error, as with sendfile: the frame's size has been written.
func copyFileRegion(w io.Writer, f *os.File, pos, length int64) error {
	n, err := io.Copy(w, io.NewSectionReader(f, pos, length))
	if err != nil {
		return err
	}
	if n != length {
		return fmt.Errorf("copying a file region: file shorter than the region (%d bytes missing)", length-n)
	}
	return nil
}

func sendfileTCP(tc *net.TCPConn, f *os.File, pos, length int64) error {
	sock, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	file, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	remaining := length
	off := pos
	// Control holds a reference on the file descriptor for the whole send, so
	// a segment closed concurrently (topic deletion, retention) cannot have its
	// descriptor number reused under us.
	cerr := file.Control(func(src uintptr) {
		err = sock.Write(func(dst uintptr) bool {
			for remaining > 0 {
				chunk := remaining
				if chunk > 1<<30 {
					chunk = 1 << 30
				}
				n, e := syscall.Sendfile(int(dst), int(src), &off, int(chunk))
				if n > 0 {
					remaining -= int64(n)
				}
				switch {
				case e == syscall.EAGAIN:
					return false // the runtime waits until writable and calls again
				case e == syscall.EINTR:
					continue
				case e != nil:
					werr = e
					return true
				case n == 0:
					werr = fmt.Errorf("sendfile: file shorter than the region (%d bytes missing)", remaining)
					return true
				}
			}
			return true
		})
	})
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	return werr
}
