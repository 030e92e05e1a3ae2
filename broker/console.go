package broker

// The web console on strait.http.listener: server-rendered pages of what
// this broker knows (the brokers, every topic with its partitions, leaders,
// ISR and, for the replicas it hosts, sizes; the groups it coordinates with
// their members and lag) and a chart of its throughput drawn by a few lines
// of plain JavaScript from /console/api/rates. Read-only: nothing here
// changes the cluster. Groups are those this broker coordinates, as with
// Kafka's per-broker group metrics; the overview links every broker's
// console when their HTTP listeners are known only by the operator, so each
// page says which broker answered.

import (
	"embed"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/replication"
)

//go:embed console/*.html
var consoleFiles embed.FS

var consoleTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"bytes": humanBytes,
	"join":  joinIDs,
}).ParseFS(consoleFiles, "console/*.html"))

// mountConsole adds the console's routes to the HTTP listener's mux.
func (s *Server) mountConsole(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusFound)
	})
	mux.HandleFunc("GET /console/{$}", s.consoleOverview)
	mux.HandleFunc("GET /console/topics", s.consoleTopics)
	mux.HandleFunc("GET /console/topics/{topic}", s.consoleTopic)
	mux.HandleFunc("GET /console/groups", s.consoleGroups)
	mux.HandleFunc("GET /console/groups/{group}", s.consoleGroup)
	mux.HandleFunc("GET /console/api/rates", s.consoleRates)
}

// consolePage is what every page's layout shows.
type consolePage struct {
	Title     string
	NodeID    int32
	ClusterID string
	Body      any
}

func (s *Server) render(w http.ResponseWriter, name, title string, body any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'")
	page := consolePage{Title: title, NodeID: s.cfg.NodeID, ClusterID: s.ClusterID(), Body: body}
	if err := consoleTemplates.ExecuteTemplate(w, name, page); err != nil {
		s.logger.Warn("console page failed", "page", name, "err", err)
	}
}

func (s *Server) consoleStarted(w http.ResponseWriter) bool {
	select {
	case <-s.ready:
		return true
	default:
		http.Error(w, "broker starting", http.StatusServiceUnavailable)
		return false
	}
}

type consoleBroker struct {
	ID         int32
	Rack       string
	Endpoints  []string
	Controller bool
	Fenced     bool
	Self       bool
}

type consoleTopicRow struct {
	Name              string
	Partitions        int
	ReplicationFactor int
	UnderReplicated   int
	Offline           int
	HostedBytes       int64
	Hosted            int
	Internal          bool
}

type overviewBody struct {
	Brokers []consoleBroker
	Topics  int
	Groups  int
}

func (s *Server) consoleOverview(w http.ResponseWriter, r *http.Request) {
	if !s.consoleStarted(w) {
		return
	}
	body := overviewBody{Topics: len(s.ctrl.Topics())}
	ctrlID := s.ctrl.ControllerID()
	for _, b := range s.ctrl.Brokers() {
		cb := consoleBroker{ID: b.NodeID, Rack: b.Rack, Controller: b.NodeID == ctrlID, Fenced: b.Fenced, Self: b.NodeID == s.cfg.NodeID}
		for _, e := range b.Endpoints {
			cb.Endpoints = append(cb.Endpoints, e.Name+"://"+e.Host+":"+strconv.Itoa(int(e.Port)))
		}
		body.Brokers = append(body.Brokers, cb)
	}
	slices.SortFunc(body.Brokers, func(a, b consoleBroker) int { return int(a.ID - b.ID) })
	if s.groupSvc != nil {
		s.groupSvc.coord.Stats(func(group.GroupStat) { body.Groups++ })
	}
	s.render(w, "overview.html", "Overview", body)
}

func (s *Server) consoleTopics(w http.ResponseWriter, r *http.Request) {
	if !s.consoleStarted(w) {
		return
	}
	sizes := s.localPartitions()
	live := s.liveBrokers()
	var rows []consoleTopicRow
	for _, t := range s.ctrl.Topics() {
		row := consoleTopicRow{Name: t.Name, Partitions: len(t.Partitions), Internal: strings.HasPrefix(t.Name, "__")}
		for _, p := range t.Partitions {
			row.ReplicationFactor = max(row.ReplicationFactor, len(p.Replicas))
			if len(p.ISR) < len(p.Replicas) {
				row.UnderReplicated++
			}
			if p.Leader < 0 || !live[p.Leader] {
				row.Offline++
			}
			if lp, ok := sizes[t.Name][p.Partition]; ok {
				row.Hosted++
				row.HostedBytes += lp.size
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b consoleTopicRow) int { return strings.Compare(a.Name, b.Name) })
	s.render(w, "topics.html", "Topics", rows)
}

type consolePartition struct {
	Partition      int32
	Leader         int32
	LeaderEpoch    int32
	Replicas       []int32
	ISR            []int32
	Hosted         bool
	Size           int64
	LogStartOffset int64
	HighWatermark  int64
	LogEndOffset   int64
}

type topicBody struct {
	Name       string
	ID         string
	Configs    [][2]string
	Partitions []consolePartition
}

func (s *Server) consoleTopic(w http.ResponseWriter, r *http.Request) {
	if !s.consoleStarted(w) {
		return
	}
	t, ok := s.ctrl.Topic(r.PathValue("topic"))
	if !ok {
		http.Error(w, "no such topic", http.StatusNotFound)
		return
	}
	local := s.localPartitions()[t.Name]
	body := topicBody{Name: t.Name, ID: controller.FormatUUID(t.ID)}
	for k, v := range t.Configs {
		body.Configs = append(body.Configs, [2]string{k, v})
	}
	slices.SortFunc(body.Configs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	for _, p := range t.Partitions {
		cp := consolePartition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR}
		if lp, ok := local[p.Partition]; ok {
			cp.Hosted, cp.Size, cp.LogStartOffset, cp.HighWatermark, cp.LogEndOffset = true, lp.size, lp.start, lp.hw, lp.end
		}
		body.Partitions = append(body.Partitions, cp)
	}
	s.render(w, "topic.html", "Topic "+t.Name, body)
}

type consoleGroupRow struct {
	ID, Type, State string
	Members         int
	Lag             int64
	LagKnown        bool
}

func (s *Server) consoleGroups(w http.ResponseWriter, r *http.Request) {
	if !s.consoleStarted(w) {
		return
	}
	var rows []consoleGroupRow
	if s.groupSvc != nil {
		// Lag as /metrics measures it: against each partition's high
		// watermark, from its leader when another broker leads it.
		g := s.groupOffsets()
		ends := s.partitionEnds(g.want, s.localPartitions())
		for _, st := range g.groups {
			row := consoleGroupRow{ID: st.ID, Type: st.Type, State: st.State, Members: st.Members}
			for _, o := range st.Committed {
				if end, ok := ends[topicPartition{o.Topic, o.Partition}]; ok {
					row.Lag += max(end-o.Offset, 0)
					row.LagKnown = true
				}
			}
			rows = append(rows, row)
		}
	}
	for _, g := range s.consoleShareGroups() {
		rows = append(rows, consoleGroupRow{ID: g.GroupID, Type: "share", State: g.GroupState, Members: len(g.Members)})
	}
	slices.SortFunc(rows, func(a, b consoleGroupRow) int { return strings.Compare(a.ID, b.ID) })
	s.render(w, "groups.html", "Groups", rows)
}

type consoleMember struct {
	ID, ClientID, Host string
	Assigned           []string // topic-partition
}

func (m *consoleMember) assign(topic string, partitions []int32) {
	for _, p := range partitions {
		m.Assigned = append(m.Assigned, topic+"-"+strconv.Itoa(int(p)))
	}
}

type consoleOffset struct {
	Topic         string
	Partition     int32
	Committed     int64
	HighWatermark int64
	Lag           int64
	Known         bool
}

type groupBody struct {
	ID, Type, State string
	Members         []consoleMember
	Offsets         []consoleOffset
	TotalLag        int64
}

func (s *Server) consoleGroup(w http.ResponseWriter, r *http.Request) {
	if !s.consoleStarted(w) || s.groupSvc == nil {
		return
	}
	id := r.PathValue("group")
	if s.shares() != nil && s.shares().IsShareGroup(id) {
		s.consoleShareGroup(w, id)
		return
	}
	var found *group.GroupStat
	s.groupSvc.coord.Stats(func(g group.GroupStat) {
		if g.ID == id {
			found = &g
		}
	})
	if found == nil {
		http.Error(w, "no such group on this broker's coordinator", http.StatusNotFound)
		return
	}
	body := groupBody{ID: found.ID, Type: found.Type, State: found.State, Members: s.consoleMembers(found)}
	want := make(map[topicPartition]struct{}, len(found.Committed))
	for _, o := range found.Committed {
		want[topicPartition{o.Topic, o.Partition}] = struct{}{}
	}
	ends := s.partitionEnds(want, s.localPartitions())
	for _, o := range found.Committed {
		co := consoleOffset{Topic: o.Topic, Partition: o.Partition, Committed: o.Offset}
		if end, ok := ends[topicPartition{o.Topic, o.Partition}]; ok {
			co.HighWatermark, co.Lag, co.Known = end, max(end-o.Offset, 0), true
			body.TotalLag += co.Lag
		}
		body.Offsets = append(body.Offsets, co)
	}
	slices.SortFunc(body.Offsets, func(a, b consoleOffset) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	s.render(w, "group.html", "Group "+found.ID, body)
}

// consoleShareGroups describes the share groups this broker coordinates,
// as ShareGroupDescribe answers them.
func (s *Server) consoleShareGroups(ids ...string) []kmsg.ShareGroupDescribeResponseGroup {
	sc := s.shares()
	if sc == nil {
		return nil
	}
	if ids == nil {
		for _, g := range sc.List() {
			ids = append(ids, g.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = ids
	var out []kmsg.ShareGroupDescribeResponseGroup
	for _, g := range sc.Describe(req, nil).Groups {
		if g.ErrorCode == 0 {
			out = append(out, g)
		}
	}
	return out
}

// consoleShareGroup is a share group's page: its members and what each is
// assigned (a share group's partitions are shared, so it has no lag per
// member; its delivery state is in the share-partitions).
func (s *Server) consoleShareGroup(w http.ResponseWriter, id string) {
	gs := s.consoleShareGroups(id)
	if len(gs) != 1 {
		http.Error(w, "no such share group on this broker's coordinator", http.StatusNotFound)
		return
	}
	body := groupBody{ID: id, Type: "share", State: gs[0].GroupState}
	for _, m := range gs[0].Members {
		cm := consoleMember{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		for _, t := range m.Assignment.TopicPartitions {
			cm.assign(t.Topic, t.Partitions)
		}
		body.Members = append(body.Members, cm)
	}
	s.render(w, "group.html", "Group "+id, body)
}

// consoleMembers describes a group's members through the coordinator's own
// describe answers (DescribeGroups for classic groups, ConsumerGroupDescribe
// for consumer groups), as an admin client would see them.
func (s *Server) consoleMembers(g *group.GroupStat) []consoleMember {
	var out []consoleMember
	coord := s.groupSvc.coord
	if g.Type == "consumer" {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{g.ID}
		resp := coord.ConsumerGroupDescribe(group.Client{Version: 0}, req)
		for _, rg := range resp.Groups {
			for _, m := range rg.Members {
				cm := consoleMember{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
				for _, t := range m.Assignment.TopicPartitions {
					cm.assign(t.Topic, t.Partitions)
				}
				out = append(out, cm)
			}
		}
		return out
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{g.ID}
	resp := coord.DescribeGroups(group.Client{Version: 5}, req)
	for _, rg := range resp.Groups {
		for _, m := range rg.Members {
			cm := consoleMember{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
			var a kmsg.ConsumerMemberAssignment
			if rg.ProtocolType == "consumer" && a.ReadFrom(m.MemberAssignment) == nil {
				for _, t := range a.Topics {
					cm.assign(t.Topic, t.Partitions)
				}
			}
			out = append(out, cm)
		}
	}
	return out
}

// consoleRates is the running totals of bytes in and out and of messages
// in, over every topic, for the overview's chart (which draws the
// differences between two polls).
func (s *Server) consoleRates(w http.ResponseWriter, r *http.Request) {
	totals := map[string]float64{}
	fams, err := s.metrics.Registry.Gather()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	want := map[string]string{
		"kafka_server_brokertopicmetrics_bytesin_total":    "bytesIn",
		"kafka_server_brokertopicmetrics_bytesout_total":   "bytesOut",
		"kafka_server_brokertopicmetrics_messagesin_total": "messagesIn",
	}
	for _, f := range fams {
		key, ok := want[f.GetName()]
		if !ok {
			continue
		}
		for _, m := range f.Metric {
			totals[key] += m.GetCounter().GetValue()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(totals)
}

// localPartition is one partition this broker hosts, as its log says.
type localPartition struct{ size, start, hw, end int64 }

func (s *Server) localPartitions() map[string]map[int32]localPartition {
	out := map[string]map[int32]localPartition{}
	s.replicas.ForEach(func(p *replication.Partition) {
		l := p.Log()
		if out[p.Topic()] == nil {
			out[p.Topic()] = map[int32]localPartition{}
		}
		out[p.Topic()][p.Index()] = localPartition{size: l.Size(), start: l.LogStartOffset(), hw: l.HighWatermark(), end: l.LogEndOffset()}
	})
	return out
}

func (s *Server) liveBrokers() map[int32]bool {
	live := map[int32]bool{}
	for _, b := range s.ctrl.Brokers() {
		live[b.NodeID] = true
	}
	return live
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGTPE"[exp]) + "iB"
}

func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ", ")
}
