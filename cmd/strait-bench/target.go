package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strait/strait/bench/brokerproc"
)

// launcher knows how to start each kind of broker the compare command drives.
type launcher struct {
	straitBin   string // bin/strait
	kfakeBin    string // bin/kfake-bench (bench/kfake)
	kafkaScript string // bench/kafka/kafka.sh
	workDir     string // scratch: one directory per started broker
	// The secured listeners (SSL, SASL_SSL, ...) a secured start opens
	// beside PLAINTEXT, the SASL mechanisms its clients use, and the
	// certificates; nil pki: no scenario needs any.
	protocols  []string
	mechanisms []string
	pki        *pki
	// acls, when above 0, turns the StandardAuthorizer on in secured
	// starts and creates that many ACLs (acls.go).
	acls int
	// scrapeMetrics gives Strait its HTTP listener (strait.http.listener)
	// and reads its /metrics every second while it runs, as a Prometheus
	// would: the cost of the metrics, compared with a run without.
	scrapeMetrics bool
}

// broker kinds, as named on the command line and in the report.
const (
	kindStrait = "strait"
	kindKafka  = "kafka"
	kindKfake  = "kfake"
)

// process is one started broker process.
type process struct {
	kind string
	dir  string
	addr string // the PLAINTEXT listener
	// listeners are the secured listeners' addresses by protocol, and
	// tlsInfo what each TLS one negotiated with Go's client.
	listeners map[string]string
	tlsInfo   map[string]string
	cmd       *exec.Cmd
	readyIn   time.Duration // exec to the first Metadata response listing a broker
	exited    chan struct{}
	waitErr   error
	// scrapes counts the /metrics reads of a -scrape-metrics run.
	scrapes atomic.Int64
}

var startSeq int

// start launches a fresh broker of kind in a new directory and waits until it
// answers Metadata; untimed preparation (Kafka's storage format) comes first.
// With secured (and l.pki set) the broker also gets a listener of each of
// l.protocols (kfake none: it has no TLS or SASL), and start returns once
// each serves an authenticated client.
func (l launcher) start(ctx context.Context, kind string, secured bool) (*process, error) {
	startSeq++
	dir := filepath.Join(l.workDir, fmt.Sprintf("%s-%d-%d", kind, os.Getpid(), startSeq))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	secured = secured && l.pki != nil && len(l.protocols) > 0 && kind != kindKfake
	listeners := map[string]string{}
	extra := []string{} // "SSL://127.0.0.1:port", ...
	props := filepath.Join(dir, "security.properties")
	if secured {
		for _, proto := range l.protocols {
			p, err := freePort()
			if err != nil {
				return nil, err
			}
			listeners[proto] = fmt.Sprintf("127.0.0.1:%d", p)
			extra = append(extra, proto+"://"+listeners[proto])
		}
		text := l.pki.brokerProperties(l.protocols, l.mechanisms)
		if l.acls > 0 {
			text += authorizerProperties()
		}
		if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
			return nil, err
		}
	}
	var cmd *exec.Cmd
	httpAddr := ""
	switch kind {
	case kindStrait:
		var args []string
		if secured {
			// Kafka's keys in a properties file, as Kafka gets them.
			args = append(args, props)
		}
		args = append(args,
			"--override", "listeners="+strings.Join(append([]string{"PLAINTEXT://" + addr}, extra...), ","),
			"--override", "log.dirs="+filepath.Join(dir, "data"))
		if l.scrapeMetrics {
			hp, err := freePort()
			if err != nil {
				return nil, err
			}
			httpAddr = fmt.Sprintf("127.0.0.1:%d", hp)
			args = append(args, "--override", "strait.http.listener="+httpAddr)
		}
		cmd = exec.Command(l.straitBin, args...)
	case kindKfake:
		cmd = exec.Command(l.kfakeBin, "-addr", addr)
	case kindKafka:
		format := exec.CommandContext(ctx, l.kafkaScript, "format", dir, strconv.Itoa(port))
		if secured {
			format.Env = append(os.Environ(), "KAFKA_EXTRA_LISTENERS="+strings.Join(extra, ","), "KAFKA_EXTRA_PROPERTIES="+props)
		}
		if out, err := format.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kafka format: %v: %s", err, out)
		}
		cmd = exec.Command(l.kafkaScript, "run", dir)
	default:
		return nil, fmt.Errorf("unknown broker %q: want strait, kafka or kfake", kind)
	}
	logf, err := os.Create(filepath.Join(dir, kind+".out"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// The broker goes when the harness goes, even on SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p := &process{kind: kind, dir: dir, addr: addr, cmd: cmd, exited: make(chan struct{})}
	if secured {
		p.listeners = listeners
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	for {
		if err := metadataProbe(addr, 250*time.Millisecond); err == nil {
			p.readyIn = time.Since(start)
			if p.tlsInfo, err = p.setupSecured(ctx, l.pki, l.mechanisms); err != nil {
				p.stop()
				return nil, fmt.Errorf("%s secured listeners: %w; see %s", kind, err, logf.Name())
			}
			if secured && l.acls > 0 {
				if err := createBenchACLs(ctx, addr, l.acls); err != nil {
					p.stop()
					return nil, fmt.Errorf("%s: %d ACLs: %w; see %s", kind, l.acls, err, logf.Name())
				}
			}
			if httpAddr != "" {
				go p.scrapeEverySecond("http://" + httpAddr + "/metrics")
			}
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before answering (%v); see %s", kind, p.waitErr, logf.Name())
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if time.Since(start) > 2*time.Minute {
			p.stop()
			return nil, fmt.Errorf("%s did not answer Metadata within 2 minutes; see %s", kind, logf.Name())
		}
	}
}

// scrapeEverySecond reads url once a second, as a Prometheus with a 1 s
// scrape interval would, until the process exits.
func (p *process) scrapeEverySecond(url string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-p.exited:
			return
		case <-tick.C:
		}
		resp, err := client.Get(url)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			p.scrapes.Add(1)
		}
	}
}

// whileRunning returns ctx, cancelled as well when the broker process
// exits: a client of a dead broker can block for good (kgo's Produce waits
// for buffer space), and the run must end with the reason instead.
func (p *process) whileRunning(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-p.exited:
			cancel(fmt.Errorf("%s exited (%v); see its log in bench/work", p.kind, p.waitErr))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// stop sends SIGTERM and waits up to 30 s before SIGKILL.
func (p *process) stop() {
	p.stopWithin(30 * time.Second)
}

// stopWithin sends SIGTERM and waits up to grace before SIGKILL; it
// reports how long the process took to exit and whether it had to be
// killed (a process that had already exited reports zero).
func (p *process) stopWithin(grace time.Duration) (took time.Duration, killed bool) {
	if p == nil {
		return 0, false
	}
	select {
	case <-p.exited:
		return 0, false
	default:
	}
	return brokerproc.StopProcess(p.cmd.Process, p.exited, grace)
}

// remove stops the process and deletes its data, keeping its logs (*.out,
// kafka.log) for a look after a failure; compare clears them at its start.
func (p *process) remove() {
	p.stop()
	entries, _ := os.ReadDir(p.dir)
	for _, e := range entries {
		if n := e.Name(); !strings.HasSuffix(n, ".out") && !strings.HasSuffix(n, ".log") {
			_ = os.RemoveAll(filepath.Join(p.dir, n))
		}
	}
}

// memory is a process's resident set from /proc/<pid>/status, in bytes.
type memory struct {
	RSS int64 `json:"rss"` // VmRSS now
	HWM int64 `json:"hwm"` // VmHWM: peak RSS since start
}

func (p *process) memory() (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			m.RSS = n << 10
		case "VmHWM":
			m.HWM = n << 10
		}
	}
	if m.RSS == 0 {
		return m, errors.New("no VmRSS in /proc status")
	}
	return m, sc.Err()
}

// cpuTime is the process's user plus system time, all threads, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func (p *process) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields count from its ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed /proc stat times")
	}
	const clockTicks = 100 // sysconf(_SC_CLK_TCK): 100 on every Linux Go supports
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// rssSampler records the largest VmRSS seen every 100 ms while it runs.
type rssSampler struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	peak  int64
}

func (p *process) sampleRSS() *rssSampler {
	s := &rssSampler{stopc: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := p.memory(); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, m.RSS)
				s.mu.Unlock()
			}
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) stop() int64 {
	close(s.stopc)
	s.wg.Wait()
	return s.peak
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
