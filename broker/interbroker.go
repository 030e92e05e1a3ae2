package broker

// Requests this broker sends to other brokers: the replica fetchers' (package
// replication, through replicaClient in replication.go) and the transaction
// coordinator's markers for partitions led elsewhere (WriteTxnMarkers, as
// Kafka's TransactionMarkerChannelManager). One franz-go client per
// destination broker, created on first use and re-created when the broker
// re-registers at another address; franz-go keeps fetches on a connection of
// their own, so a replica fetch long-poll does not hold up a marker.
//
// The clients connect to the other broker's endpoint of the inter-broker
// listener (inter.broker.listener.name) and speak its security protocol:
// TLS with this broker's settings of that listener (its truststore, and
// its keystore for mTLS), and SASL with sasl.mechanism.inter.broker.protocol
// and the username and password of that mechanism's JAAS config on the
// listener, as Kafka's inter-broker channel does.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
	"github.com/strait/strait/storage"
)

type interBrokerClients struct {
	mu      sync.Mutex
	clients map[int32]*interBrokerClient

	// listener is the inter-broker listener's name; tls its TLS settings
	// (nil: plaintext); mech the SASL mechanism (nil: none). Set by New.
	listener string
	tls      *config.TLS
	mech     kgosasl.Mechanism
}

// newClientTLS is security.ClientTLS; a variable for the package's tests.
var newClientTLS = security.ClientTLS

// setupInterBroker reads how this broker reaches the others: the
// inter-broker listener's security protocol, TLS settings and SASL
// client credentials. A mechanism without usable credentials is a
// *config.ConfigError.
func (s *Server) setupInterBroker() error {
	ib := &s.interBroker
	ib.listener = s.cfg.Network.InterBrokerListenerName
	ls, ok := s.cfg.Security.Listeners[ib.listener]
	if !ok {
		return nil // PLAINTEXT
	}
	if ls.UsesTLS() {
		ib.tls = ls.TLS
		// The truststore and keystore load now, so that a bad one stops
		// the broker at start rather than at its first replica fetch.
		if _, err := newClientTLS(ls.TLS, "localhost"); err != nil {
			return err
		}
	}
	if ls.UsesSASL() {
		m, err := interBrokerMechanism(s.cfg.Security.InterBrokerMechanism, ls.SASL)
		if err != nil {
			return err
		}
		ib.mech = m
	}
	return nil
}

// interBrokerMechanism is the client side of mech with the username and
// password (or, for OAUTHBEARER, the unsecured token's subject) of its
// JAAS config on the listener.
func interBrokerMechanism(mech string, sc *config.SASL) (kgosasl.Mechanism, error) {
	const key = "sasl.mechanism.inter.broker.protocol"
	if mech == "" {
		mech = "GSSAPI"
	}
	var jaas config.JAAS
	if sc != nil {
		jaas = sc.JAAS[mech]
	}
	opt := func(name string) string { return jaas.Options[name].Reveal() }
	user, pass := opt("username"), opt("password")
	needUser := func() error {
		if user == "" {
			return &config.ConfigError{Key: key, Message: "The inter-broker SASL mechanism " + mech +
				" needs a username and password in the listener's " + mech + " JAAS config (sasl.jaas.config)."}
		}
		return nil
	}
	switch mech {
	case "PLAIN":
		if err := needUser(); err != nil {
			return nil, err
		}
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case security.ScramSHA256, security.ScramSHA512:
		if err := needUser(); err != nil {
			return nil, err
		}
		a := scram.Auth{User: user, Pass: pass}
		if mech == security.ScramSHA256 {
			return a.AsSha256Mechanism(), nil
		}
		return a.AsSha512Mechanism(), nil
	case "OAUTHBEARER":
		sub := opt("unsecuredLoginStringClaim_sub")
		if sub == "" {
			return nil, &config.ConfigError{Key: key, Message: "The inter-broker SASL mechanism OAUTHBEARER needs " +
				"unsecuredLoginStringClaim_sub in the listener's OAUTHBEARER JAAS config (only unsecured tokens are made by the broker)."}
		}
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: unsecuredJWT(sub, time.Now(), time.Hour)}, nil
		}), nil
	}
	return nil, &config.ConfigError{Key: key, Message: "The inter-broker SASL mechanism " + mech + " is not supported by Strait."}
}

// unsecuredJWT is Kafka's OAuthBearerUnsecuredLoginCallbackHandler's token:
// an unsigned JWT (alg none) with sub, iat and exp.
func unsecuredJWT(sub string, now time.Time, life time.Duration) string {
	enc := base64.RawURLEncoding
	hdr, _ := json.Marshal(map[string]string{"alg": "none"})
	body, _ := json.Marshal(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()})
	return enc.EncodeToString(hdr) + "." + enc.EncodeToString(body) + "."
}

// interBrokerOpts are the dial options for a client of the broker at
// host: TLS with host as the server name, SASL.
func (s *Server) interBrokerOpts(host string) ([]kgo.Opt, error) {
	ib := &s.interBroker
	var opts []kgo.Opt
	if ib.tls != nil {
		tc, err := newClientTLS(ib.tls, host)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if ib.mech != nil {
		opts = append(opts, kgo.SASL(ib.mech))
	}
	return opts, nil
}

type interBrokerClient struct {
	addr string
	cl   *kgo.Client
}

// brokerAddr is a live broker's endpoint of the inter-broker listener
// (its first one if it has none by that name: a broker of an older
// configuration).
func (s *Server) brokerAddr(id int32) (string, bool) {
	for _, b := range s.ctrl.Brokers() {
		if b.NodeID != id || len(b.Endpoints) == 0 {
			continue
		}
		ep := b.Endpoints[0]
		for _, e := range b.Endpoints {
			if e.Name == s.interBroker.listener {
				ep = e
				break
			}
		}
		return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), true
	}
	return "", false
}

// sendToBroker sends req to broker id and returns its response.
func (s *Server) sendToBroker(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	if err := s.peerGate(ctx, id); err != nil {
		return nil, err
	}
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
		host, _, _ := net.SplitHostPort(addr)
		opts, err := s.interBrokerOpts(host)
		if err != nil {
			ib.mu.Unlock()
			return nil, err
		}
		opts = append(opts, kgo.SeedBrokers(addr),
			kgo.ClientID(fmt.Sprintf("broker-%d", s.cfg.NodeID)),
			kgo.DialTimeout(5*time.Second), kgo.RequestRetries(0))
		cl, err := kgo.NewClient(opts...)
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
