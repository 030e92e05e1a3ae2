package broker

// ElectLeaders (key 43); versions: see the registration below (v0 is always
// a preferred election).
//
// As Kafka 4.x's controller (ReplicationControlManager.electLeaders): each
// named partition gets a preferred or unclean election, in request order,
// with one result per mention: UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED
// (the preferred replica already leads; unclean: there is a leader),
// PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica is not an active ISR
// member) or ELIGIBLE_LEADERS_NOT_AVAILABLE. A null topic list means every
// partition of every topic: each topic is listed, but partitions whose
// election was not needed are left out. An unknown election type fails the
// whole request with INVALID_REQUEST, which Kafka's error response repeats for
// every named partition.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ElectLeaders, 0, 2, handleElectLeaders) }

// electionMessages are Kafka's texts (Errors.java) for the codes an election
// answers with no message of its own; franz-go's descriptions differ in
// punctuation.
var electionMessages = map[int16]string{
	kerr.ElectionNotNeeded.Code:           "Leader election not needed for topic partition.",
	kerr.PreferredLeaderNotAvailable.Code: "The preferred leader was not available.",
	kerr.EligibleLeadersNotAvailable.Code: "Eligible topic partition leaders are not available.",
}

func handleElectLeaders(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ElectLeadersRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.Topics = []kmsg.ElectLeadersResponseTopic{}
	if !c.authorizeCluster(acl.OpAlter) { // authorize.go: every partition named refused
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		x.respond(resp)
		return
	}
	ctx, cancel := requestContext(req.TimeoutMillis)
	defer cancel()

	var partitions []controller.TopicPartitions // nil: every partition
	if req.Topics != nil {
		partitions = make([]controller.TopicPartitions, 0, len(req.Topics))
		for _, rt := range req.Topics {
			partitions = append(partitions, controller.TopicPartitions{Topic: rt.Topic, Partitions: rt.Partitions})
		}
	}
	typ := controller.ElectionType(req.ElectionType)
	results, err := s.ctrl.ElectLeaders(ctx, typ, partitions)
	if err != nil {
		// ElectLeadersRequest.getErrorResponse: the error at the top and on
		// every named partition.
		code, msg := s.apiErrorFields(err, "ElectLeaders", "")
		resp.ErrorCode = code
		for _, rt := range req.Topics {
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, msg
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		x.respond(resp)
		return
	}

	if partitions != nil {
		// One result per mention, in request order: zip them back.
		i := 0
		for _, rt := range req.Topics {
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = rt.Topic
			t.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			for _, p := range rt.Partitions {
				if i >= len(results) { // the controller answers every mention; never index past it
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, kerr.UnknownServerError.Code
					t.Partitions = append(t.Partitions, rp)
					continue
				}
				t.Partitions = append(t.Partitions, electionResult(results[i]))
				i++
			}
			resp.Topics = append(resp.Topics, t)
		}
		x.respond(resp)
		return
	}

	// Every topic is listed, also those with nothing to elect.
	byTopic := map[string]int{}
	addTopic := func(name string) int {
		if i, ok := byTopic[name]; ok {
			return i
		}
		t := kmsg.NewElectLeadersResponseTopic()
		t.Topic = name
		t.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
		resp.Topics = append(resp.Topics, t)
		byTopic[name] = len(resp.Topics) - 1
		return byTopic[name]
	}
	for _, t := range s.ctrl.Topics() {
		addTopic(t.Name)
	}
	for _, r := range results {
		i := addTopic(r.Topic)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, electionResult(r))
	}
	x.respond(resp)
}

// electionResult is one partition's result with Kafka's code and message
// (none on success).
func electionResult(r controller.PartitionResult) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition = r.Partition
	if r.Err == nil {
		return rp
	}
	code, _ := errorCode(r.Err)
	rp.ErrorCode = code
	msg := controller.ErrorMessage(r.Err)
	var ke *kerr.Error
	if m, ok := electionMessages[code]; ok && errors.As(r.Err, &ke) && msg == ke.Description {
		msg = m
	}
	rp.ErrorMessage = &msg
	return rp
}
