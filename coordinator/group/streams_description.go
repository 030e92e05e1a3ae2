package group

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topology descriptions (KIP-1331): with a topology description plugin,
// Kafka 4.4's coordinator sets TopologyDescriptionRequired on a
// StreamsGroupHeartbeat answer while it lacks the description of the
// group's topology epoch, the member pushes it with
// StreamsGroupTopologyDescriptionUpdate, the plugin keeps it, and
// StreamsGroupDescribe (IncludeTopologyDescription) serves it. Strait
// implements one plugin, Kafka's own InMemoryTopologyDescriptionPlugin
// (Config.TopologyDescriptions): the description is kept with the group in
// memory; the StoredDescriptionTopologyEpoch and
// FailedDescriptionTopologyEpoch fields of the StreamsGroupMetadata record
// go to __consumer_offsets, and a coordinator that loads the group marks the
// stored epoch uncertain, so its members are asked to push it again. Without
// a plugin (Kafka's default) the update is UNSUPPORTED_VERSION and describe
// says NOT_STORED.

// descEpochUncertain is StoredDescriptionTopologyEpoch's "uncertain": the
// coordinator may not hold the description; it asks for it like -1.
const descEpochUncertain int32 = -2

// Topology description statuses of StreamsGroupDescribe v1.
const (
	topologyDescriptionNotRequested int8 = 0
	topologyDescriptionNotStored    int8 = 1
	topologyDescriptionAvailable    int8 = 3
)

// Bounds on a pushed description (Strait's; Kafka leaves them to the
// plugin): beyond them the push fails permanently, as a plugin refusing it
// would, and the members are not asked again for that topology epoch.
const (
	maxDescriptionParts = 10_000   // subtopologies and global stores
	maxDescriptionItems = 200_000  // nodes and the names they list
	maxDescriptionBytes = 16 << 20 // the names' bytes
)

// descBackoff is Kafka's StreamsGroupTopologyDescriptionBackoff for one
// group: after asking for the description of a topology epoch, the
// coordinator asks again only after 30 s, doubling up to an hour (each
// with 20% jitter), so members that cannot push are not asked at every
// heartbeat.
type descBackoff struct {
	armed    bool
	epoch    int32
	attempts int
	next     time.Time
}

func (b *descBackoff) active(epoch int32, now time.Time) bool {
	return b.armed && b.epoch == epoch && now.Before(b.next)
}

// arm starts or extends the window for epoch.
func (b *descBackoff) arm(epoch int32, now time.Time) {
	attempts := 0
	if b.armed && b.epoch == epoch {
		attempts = b.attempts + 1
	}
	d := 30 * time.Second
	for i := 0; i < attempts && d < time.Hour; i++ {
		d *= 2
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	d = min(d, time.Hour)
	*b = descBackoff{armed: true, epoch: epoch, attempts: attempts, next: now.Add(d)}
}

// clear ends the window of epoch (a push of it succeeded).
func (b *descBackoff) clear(epoch int32) {
	if b.armed && b.epoch == epoch {
		*b = descBackoff{}
	}
}

func (sg *streamsGroup) topologyEpoch() int32 {
	if sg.topology == nil {
		return -1
	}
	return sg.topology.Epoch
}

// maybeRequireDescriptionLocked is Kafka's
// maybeSetTopologyDescriptionRequired: ask a heartbeating member (v1+, not
// leaving, answered without error or STALE_TOPOLOGY) for the description
// of the group's topology epoch when none is stored or failed for it and
// no earlier request is waiting out its backoff.
func (g *group) maybeRequireDescriptionLocked(req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) {
	sg := g.streams
	if !g.c.cfg.TopologyDescriptions || req.Version < 1 || req.MemberEpoch < 0 || resp.ErrorCode != 0 || sg == nil {
		return
	}
	epoch := sg.topologyEpoch()
	if epoch < 0 || sg.storedDesc == epoch || sg.failedDesc == epoch {
		return
	}
	for _, s := range resp.Status {
		if s.StatusCode == statusStaleTopology {
			return
		}
	}
	now := g.c.now()
	if sg.solicit.active(epoch, now) {
		return
	}
	sg.solicit.arm(epoch, now)
	resp.TopologyDescriptionRequired = true
}

// StreamsGroupTopologyDescriptionUpdate (key 93), version 0: a member's
// push of its topology description, checked as Kafka's
// GroupCoordinatorService does (the plugin, the ids, then the group, the
// member and the topology epoch), kept with the group, and its epoch
// written to the StreamsGroupMetadata record before the answer.
func (c *Coordinator) StreamsGroupTopologyDescriptionUpdate(req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	fail := func(code int16, msg string) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	invalid := kerr.InvalidRequest.Code
	switch {
	case !c.cfg.StreamsProtocol:
		return fail(kerr.UnsupportedVersion.Code, "")
	case c.closed.Load():
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	case !c.cfg.TopologyDescriptions:
		return fail(kerr.UnsupportedVersion.Code, "The broker has no streams group topology description plugin configured.")
	case req.MemberID == "":
		return fail(invalid, "MemberId can't be empty.")
	case req.Group == "":
		return fail(invalid, "GroupId can't be empty.")
	}
	g, code := c.lockGroup(req.Group, false)
	if code != 0 {
		return fail(code, "")
	}
	if g == nil {
		return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" not found.")
	}
	defer g.mu.Unlock()
	if g.kind != kindStreams {
		return fail(kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a streams group.")
	}
	sg := g.streams
	if sg.members[req.MemberID] == nil {
		return fail(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group))
	}
	if cur := sg.topologyEpoch(); req.TopologyEpoch != cur {
		return fail(invalid, fmt.Sprintf("Topology epoch %d does not match the group's current topology epoch %d.", req.TopologyEpoch, cur))
	}
	desc, msg := convertDescription(&req.TopologyDescription)
	if msg != "" {
		return fail(invalid, msg)
	}
	prevDesc, prevDescEpoch, prevStored, prevFailed := sg.description, sg.descEpoch, sg.storedDesc, sg.failedDesc
	now := c.now()
	if tooLarge(desc) {
		// A permanent failure: Kafka leaves the stored epoch uncertain and
		// records the failed one, which stops the asking.
		sg.description, sg.descEpoch = nil, 0
		sg.storedDesc, sg.failedDesc = descEpochUncertain, max(sg.failedDesc, req.TopologyEpoch)
		msg = fmt.Sprintf("The topology description exceeds this broker's bounds (%d subtopologies and global stores, %d nodes and names, %d bytes of names).",
			maxDescriptionParts, maxDescriptionItems, maxDescriptionBytes)
		code = kerr.StreamsTopologyDescriptionUpdateFailed.Code
	} else {
		sg.description, sg.descEpoch = desc, req.TopologyEpoch
		sg.storedDesc = max(sg.storedDesc, req.TopologyEpoch)
	}
	if err := g.persistStreamsLocked(nil); err != nil {
		sg.description, sg.descEpoch, sg.storedDesc, sg.failedDesc = prevDesc, prevDescEpoch, prevStored, prevFailed
		sg.solicit.arm(req.TopologyEpoch, now)
		return fail(appendErrorCode(err), "")
	}
	sg.solicit.clear(req.TopologyEpoch)
	if code != 0 {
		return fail(code, msg)
	}
	return resp
}

// convertDescription is Kafka's StreamsGroupTopologyDescriptionConverter,
// from the request to what StreamsGroupDescribe answers: each node keeps
// the fields of its type, its lists without repeats; a node of an unknown
// type, or a global store that is not a source and a processor, is an
// invalid request.
func convertDescription(in *kmsg.TopologyDescription) (*kmsg.StreamsGroupDescribeResponseGroupTopologyDescription, string) {
	out := kmsg.NewStreamsGroupDescribeResponseGroupTopologyDescription()
	out.Subtopologies = []kmsg.TopologyDescriptionSubtopology{}
	out.GlobalStores = []kmsg.TopologyDescriptionGlobalStore{}
	for _, st := range in.Subtopologies {
		s := kmsg.NewTopologyDescriptionSubtopology()
		s.SubtopologyID = st.SubtopologyID
		s.Nodes = []kmsg.TopologyDescriptionNode{}
		for i := range st.Nodes {
			n, msg := convertNode(&st.Nodes[i])
			if msg != "" {
				return nil, msg
			}
			s.Nodes = append(s.Nodes, n)
		}
		out.Subtopologies = append(out.Subtopologies, s)
	}
	for i := range in.GlobalStores {
		src, msg := convertNode(&in.GlobalStores[i].Source)
		if msg != "" {
			return nil, msg
		}
		proc, msg := convertNode(&in.GlobalStores[i].Processor)
		if msg != "" {
			return nil, msg
		}
		if src.NodeType != nodeSource || proc.NodeType != nodeProcessor {
			return nil, "Global store must be composed of a source and a processor node."
		}
		gs := kmsg.NewTopologyDescriptionGlobalStore()
		gs.Source, gs.Processor = src, proc
		out.GlobalStores = append(out.GlobalStores, gs)
	}
	return &out, ""
}

// Node types of a topology description.
const (
	nodeSource    int8 = 1
	nodeProcessor int8 = 2
	nodeSink      int8 = 3
)

func convertNode(in *kmsg.TopologyDescriptionNode) (kmsg.TopologyDescriptionNode, string) {
	n := kmsg.NewTopologyDescriptionNode()
	n.Name, n.NodeType = in.Name, in.NodeType
	n.SourceTopics, n.Stores, n.Successors = []string{}, []string{}, distinct(in.Successors)
	switch in.NodeType {
	case nodeSource:
		n.SourceTopics = distinct(in.SourceTopics)
	case nodeProcessor:
		n.Stores = distinct(in.Stores)
	case nodeSink:
		n.SinkTopic = in.SinkTopic
	default:
		return n, fmt.Sprintf("Unknown topology node type: %d", in.NodeType)
	}
	return n, ""
}

// distinct is in without repeats, in first-seen order (Kafka's
// LinkedHashSet), never nil.
func distinct(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]struct{}, len(in))
	for _, s := range in {
		if _, ok := seen[s]; !ok {
			seen[s] = struct{}{}
			out = append(out, s)
		}
	}
	return out
}

func tooLarge(d *kmsg.StreamsGroupDescribeResponseGroupTopologyDescription) bool {
	if len(d.Subtopologies)+len(d.GlobalStores) > maxDescriptionParts {
		return true
	}
	items, size := 0, 0
	count := func(n *kmsg.TopologyDescriptionNode) {
		items += 1 + len(n.SourceTopics) + len(n.Stores) + len(n.Successors)
		size += len(n.Name)
		if n.SinkTopic != nil {
			size += len(*n.SinkTopic)
		}
		for _, l := range [][]string{n.SourceTopics, n.Stores, n.Successors} {
			for _, s := range l {
				size += len(s)
			}
		}
	}
	for i := range d.Subtopologies {
		for j := range d.Subtopologies[i].Nodes {
			count(&d.Subtopologies[i].Nodes[j])
		}
	}
	for i := range d.GlobalStores {
		count(&d.GlobalStores[i].Source)
		count(&d.GlobalStores[i].Processor)
	}
	for i := range d.Subtopologies {
		size += len(d.Subtopologies[i].SubtopologyID)
	}
	return items > maxDescriptionItems || size > maxDescriptionBytes
}

// describeDescriptionLocked fills a described group's topology
// description as Kafka's attachTopologyDescriptions does: AVAILABLE when
// the description of the group's topology epoch is held, else NOT_STORED.
func (c *Coordinator) describeDescriptionLocked(sg *streamsGroup, req *kmsg.StreamsGroupDescribeRequest, dg *kmsg.StreamsGroupDescribeResponseGroup) {
	dg.TopologyDescriptionStatus = topologyDescriptionNotRequested
	if !req.IncludeTopologyDescription {
		return
	}
	dg.TopologyDescriptionStatus = topologyDescriptionNotStored
	epoch := sg.topologyEpoch()
	if !c.cfg.TopologyDescriptions || epoch < 0 || sg.storedDesc < 0 || sg.description == nil || sg.descEpoch != epoch {
		return
	}
	d := *sg.description
	dg.TopologyDescription = &d
	dg.TopologyDescriptionStatus = topologyDescriptionAvailable
}
