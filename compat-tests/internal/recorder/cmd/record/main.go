// Command record runs a client session through the recording proxy
// (package recorder) to one broker and writes the recording:
//
//	record -upstream HOST:PORT -out FILE -session franz-go
//	record -upstream HOST:PORT -out FILE -session NAME -- COMMAND ARGS...
//
// With -session franz-go it runs its own franz-go session (below); with a
// command it runs that command with STRAIT_RECORD_BOOTSTRAP set to the
// proxy's address, the session being whatever the command does there.
// compat-tests/reference/record.sh drives it against Apache Kafka 4.4.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"time"

	"github.com/strait/strait/compat-tests/internal/recorder"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	upstream := flag.String("upstream", "", "the broker's host:port")
	out := flag.String("out", "", "the recording file to write")
	session := flag.String("session", "", "the session's name (franz-go: the built-in session)")
	upstreamName := flag.String("upstream-name", "", "what the broker is, for the recording's header")
	flag.Parse()
	if *upstream == "" || *out == "" || *session == "" {
		flag.Usage()
		os.Exit(2)
	}
	p, err := recorder.Listen(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	switch {
	case flag.NArg() > 0:
		cmd := exec.CommandContext(ctx, flag.Arg(0), flag.Args()[1:]...)
		cmd.Env = append(os.Environ(), "STRAIT_RECORD_BOOTSTRAP="+p.Addr())
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err = cmd.Run()
	case *session == "franz-go":
		err = franzGoSession(ctx, p.Addr())
	default:
		err = errors.New("no command given and -session is not franz-go")
	}
	frames := p.Close()
	if err != nil {
		log.Fatalf("the %s session failed: %v", *session, err)
	}
	rec := &recorder.Recording{
		Header: recorder.Header{Format: recorder.Format, Session: *session, Upstream: *upstreamName, RecordedAt: started.UTC().Truncate(time.Second)},
		Frames: frames,
	}
	if err := rec.Write(*out); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d requests on %d connections\n", *out, len(frames), conns(frames))
}

func conns(frames []recorder.Frame) int {
	seen := map[int]bool{}
	for _, f := range frames {
		seen[f.Conn] = true
	}
	return len(seen)
}

// franzGoSession: topics created, described, configured; records produced
// (idempotently, franz-go's default); consumed in a KIP-848 consumer group
// (the broker assigns) and in a classic one, offsets committed; a record
// produced in a committed transaction; the group described and its offsets
// and end offsets fetched; a topic deleted.
func franzGoSession(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("rec-franz-go"))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic, tmp, group = "rec-franz", "rec-franz-tmp", "rec-franz-group"
	if r, err := adm.CreateTopics(ctx, 3, 1, nil, topic, tmp); err != nil || r.Error() != nil {
		return fmt.Errorf("create topics: %v %v", err, r.Error())
	}
	if _, err := adm.DescribeTopicConfigs(ctx, topic); err != nil {
		return err
	}
	retention := "86400000"
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &retention}}, topic); err != nil {
		return err
	} else if _, err := r.On(topic, nil); err != nil {
		return err
	}
	if _, err := adm.DescribeTopicConfigs(ctx, topic); err != nil {
		return err
	}
	if _, err := adm.DescribeBrokerConfigs(ctx); err != nil {
		return err
	}
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%10)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %v", err)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("rec-franz-go-consumer"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(500*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	got := 0
	for got < len(recs) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			cons.Close()
			return fmt.Errorf("consumed %d of %d records: %v", got, len(recs), ctx.Err())
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		cons.Close()
		return fmt.Errorf("commit: %v", err)
	}
	cons.Close() // leaves the group

	// The classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
	// with franz-go's default cooperative-sticky balancer.
	classic, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("rec-franz-go-classic"),
		kgo.ConsumerGroup(group+"-classic"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	for got = 0; got < len(recs); {
		fs := classic.PollFetches(ctx)
		if ctx.Err() != nil {
			classic.Close()
			return fmt.Errorf("classic group: consumed %d of %d records: %v", got, len(recs), ctx.Err())
		}
		got += fs.NumRecords()
	}
	if err := classic.CommitUncommittedOffsets(ctx); err != nil {
		classic.Close()
		return fmt.Errorf("classic group: commit: %v", err)
	}
	classic.Close()

	// A committed transaction.
	txn, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("rec-franz-go-txn"), kgo.TransactionalID("rec-franz-txn"))
	if err != nil {
		return err
	}
	if err := txn.BeginTransaction(); err != nil {
		txn.Close()
		return err
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k0"), Value: []byte("in a transaction")}).FirstErr(); err != nil {
		txn.Close()
		return fmt.Errorf("transactional produce: %v", err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		txn.Close()
		return fmt.Errorf("commit transaction: %v", err)
	}
	txn.Close()

	if _, err := adm.DescribeConsumerGroups(ctx, group); err != nil {
		return err
	}
	if _, err := adm.FetchOffsets(ctx, group); err != nil {
		return err
	}
	if _, err := adm.ListEndOffsets(ctx, topic); err != nil {
		return err
	}
	if r, err := adm.DeleteTopics(ctx, tmp); err != nil || r.Error() != nil {
		return fmt.Errorf("delete topic: %v %v", err, r.Error())
	}
	_, err = adm.ListTopics(ctx)
	return err
}
