package broker

// Requests this broker sends to other brokers: the replica fetchers' (package
// replication, through replicaClient in replication.go) and the transaction
// coordinator's markers for partitions led elsewhere (WriteTxnMarkers, as
// Kafka's TransactionMarkerChannelManager). One franz-go client per
// destination broker, created on first use and re-created when the broker
// re-registers at another address; franz-go keeps fetches on a connection of
// their own, so a replica fetch long-poll does not hold up a marker.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/storage"
)

type interBrokerClients struct {
	mu      sync.Mutex
	clients map[int32]*interBrokerClient
}

type interBrokerClient struct {
	addr string
	cl   *kgo.Client
}

// brokerAddr is a live broker's first advertised endpoint.
func (s *Server) brokerAddr(id int32) (string, bool) {
	for _, b := range s.ctrl.Brokers() {
		if b.NodeID == id && len(b.Endpoints) > 0 {
			ep := b.Endpoints[0]
			return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), true
		}
	}
	return "", false
}

// sendToBroker sends req to broker id and returns its response.
func (s *Server) sendToBroker(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, ok := s.brokerAddr(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered: %w", id, kerr.BrokerNotAvailable)
	}
	ib := &s.interBroker
	ib.mu.Lock()
	if ib.clients == nil {
		ib.clients = map[int32]*interBrokerClient{}
	}
	c := ib.clients[id]
	if c == nil || c.addr != addr {
		if c != nil {
			c.cl.Close()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
			kgo.ClientID(fmt.Sprintf("broker-%d", s.cfg.NodeID)),
			kgo.DialTimeout(5*time.Second), kgo.RequestRetries(0))
		if err != nil {
			ib.mu.Unlock()
			return nil, err
		}
		c = &interBrokerClient{addr: addr, cl: cl}
		ib.clients[id] = c
	}
	ib.mu.Unlock()
	return c.cl.SeedBrokers()[0].Request(ctx, req)
}

func (s *Server) closeInterBrokerClients() {
	ib := &s.interBroker
	ib.mu.Lock()
	defer ib.mu.Unlock()
	for id, c := range ib.clients {
		c.cl.Close()
		delete(ib.clients, id)
	}
}

// sendTxnMarker writes a transaction marker to a partition another broker
// leads, with a WriteTxnMarkers request; the error is the partition's.
func (s *Server) sendTxnMarker(leader int32, topic string, idx int32, m storage.TxnMarker) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = topic, []int32{idx}
	rm.Topics = append(rm.Topics, rt)
	req.Markers = append(req.Markers, rm)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := s.sendToBroker(ctx, leader, req)
	if err != nil {
		return fmt.Errorf("sending a transaction marker to broker %d: %w", leader, kerr.NotLeaderForPartition)
	}
	resp := raw.(*kmsg.WriteTxnMarkersResponse)
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if p.Partition == idx && p.ErrorCode != 0 {
					return kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	return nil
}
