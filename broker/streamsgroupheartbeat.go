package broker

// StreamsGroupHeartbeat (key 88), versions 0-1 as Kafka 4.4 serves them
// (KIP-1071, v1 from KIP-1331): a Kafka Streams member's join, heartbeat,
// task reconciliation and leave, handed to the group coordinator
// (coordinator/group/streams.go). Authorization as KafkaApis: READ on the
// group, DESCRIBE on every topic the topology names; the internal topics
// the group lacks are created here after the answer is computed (Kafka's
// AutoTopicCreationManager.createStreamsInternalTopics), when the principal
// may CREATE them (on the cluster or the topic), in the background, so the
// member learns of them at a later heartbeat, as with Kafka.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.StreamsGroupHeartbeat, 0, 1, handleStreamsGroupHeartbeat) }

// streamsTopicsInFlight holds the internal topics being created, so
// heartbeats of several members start one creation each.
var streamsTopicsInFlight sync.Map // *Server + name -> struct{}

type inflightKey struct {
	s    *Server
	name string
}

func handleStreamsGroupHeartbeat(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	fail := func(code int16, msg string) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		x.respond(resp)
	}
	if !c.authorizeGroup(acl.OpRead, req.Group) {
		fail(kerr.GroupAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Description)
		return
	}
	if req.Topology != nil {
		for _, st := range req.Topology.Subtopologies {
			names := append([]string(nil), st.SourceTopics...)
			names = append(names, st.RepartitionSinkTopics...)
			for _, t := range st.StateChangelogTopics {
				names = append(names, t.Topic)
			}
			for _, t := range st.RepartitionSourceTopics {
				names = append(names, t.Topic)
			}
			for _, name := range names {
				if !c.authorizeTopic(acl.OpDescribe, name) {
					fail(kerr.TopicAuthorizationFailed.Code, "Unauthorized to describe topic "+name+".")
					return
				}
			}
		}
	}
	resp, missing := c.srv.groups().coord.StreamsGroupHeartbeat(groupClient(c, x), req)
	if len(missing) > 0 && resp.ErrorCode == 0 {
		var denied []string
		for _, t := range missing {
			if c.authorizeCluster(acl.OpCreate) || c.authorizeTopic(acl.OpCreate, t.Name) {
				c.srv.createStreamsInternalTopic(t)
			} else {
				denied = append(denied, t.Name)
			}
		}
		if len(denied) > 0 {
			s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
			s.StatusCode = 3 // MISSING_INTERNAL_TOPICS
			s.StatusDetail = "Unauthorized to CREATE on topics " + joinNames(denied) + "."
			resp.Status = append(resp.Status, s)
		}
	}
	x.respond(resp)
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// createStreamsInternalTopic creates a repartition or changelog topic in
// the background; one creation per topic at a time.
func (s *Server) createStreamsInternalTopic(t group.StreamsInternalTopic) {
	key := inflightKey{s, t.Name}
	if _, busy := streamsTopicsInFlight.LoadOrStore(key, struct{}{}); busy {
		return
	}
	started := s.bg.Go(func() {
		defer streamsTopicsInFlight.Delete(key)
		rf := t.ReplicationFactor
		if rf <= 0 {
			rf = -1 // the cluster default (default.replication.factor)
		}
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		defer cancel()
		_, err := s.ctrl.CreateTopic(ctx, controller.CreateTopicRequest{
			Name: t.Name, NumPartitions: t.Partitions, ReplicationFactor: rf, Configs: t.Configs,
		})
		if err != nil {
			if _, ok := s.ctrl.Topic(t.Name); !ok {
				s.logger.Warn("creating a streams internal topic failed", "topic", t.Name, "err", err)
			}
			return
		}
		s.logger.Info("created streams internal topic", "topic", t.Name, "partitions", t.Partitions)
	})
	if !started {
		streamsTopicsInFlight.Delete(key)
	}
}
