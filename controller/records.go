package controller

import (
	"encoding/json"
	"slices"
)

// The JSON records stored in etcd. They are kept apart from the exported
// types so the API can change without changing what is on disk.

type topicRecord struct {
	Name     string            `json:"name"`
	ID       string            `json:"id"` // FormatUUID of the topic id
	Internal bool              `json:"internal,omitempty"`
	Configs  map[string]string `json:"configs,omitempty"`
}

type partitionRecord struct {
	Replicas       []int32 `json:"replicas"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	ISR            []int32 `json:"isr"`
	PartitionEpoch int32   `json:"partitionEpoch"`
	// Set only while a reassignment is in progress.
	AddingReplicas   []int32 `json:"addingReplicas,omitempty"`
	RemovingReplicas []int32 `json:"removingReplicas,omitempty"`
	// Eligible leader replicas (KIP-966), set only when not empty.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"lastKnownElr,omitempty"`
}

type endpointRecord struct {
	Name             string `json:"name"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"securityProtocol"`
}

type brokerRecord struct {
	NodeID               int32            `json:"nodeId"`
	Rack                 string           `json:"rack,omitempty"`
	Endpoints            []endpointRecord `json:"endpoints"`
	Fenced               bool             `json:"fenced,omitempty"`
	InControlledShutdown bool             `json:"inControlledShutdown,omitempty"`
	TruncatesOnFetch     bool             `json:"truncatesOnFetch,omitempty"`
}

func encodeBroker(b BrokerInfo) string {
	rec := brokerRecord{NodeID: b.NodeID, Rack: b.Rack, Endpoints: make([]endpointRecord, len(b.Endpoints)),
		Fenced: b.Fenced, InControlledShutdown: b.InControlledShutdown, TruncatesOnFetch: b.TruncatesOnFetch}
	for i, e := range b.Endpoints {
		rec.Endpoints[i] = endpointRecord(e)
	}
	out, _ := json.Marshal(rec) // cannot fail: plain fields only
	return string(out)
}

func decodeBroker(value []byte) (BrokerInfo, error) {
	var rec brokerRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return BrokerInfo{}, err
	}
	b := BrokerInfo{NodeID: rec.NodeID, Rack: rec.Rack, Endpoints: make([]Endpoint, len(rec.Endpoints)),
		Fenced: rec.Fenced, InControlledShutdown: rec.InControlledShutdown, TruncatesOnFetch: rec.TruncatesOnFetch}
	for i, e := range rec.Endpoints {
		b.Endpoints[i] = Endpoint(e)
	}
	return b, nil
}

func encodeTopic(t *TopicInfo) string {
	out, _ := json.Marshal(topicRecord{Name: t.Name, ID: FormatUUID(t.ID), Internal: t.Internal, Configs: t.Configs})
	return string(out)
}

// decodeTopic returns the topic's fields without partitions.
func decodeTopic(value []byte) (TopicInfo, error) {
	var rec topicRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return TopicInfo{}, err
	}
	id, err := ParseUUID(rec.ID)
	if err != nil {
		return TopicInfo{}, err
	}
	return TopicInfo{Name: rec.Name, ID: id, Internal: rec.Internal, Configs: rec.Configs}, nil
}

func encodePartition(p PartitionInfo) string {
	out, _ := json.Marshal(partitionRecord{
		Replicas: p.Replicas, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
		ISR: p.ISR, PartitionEpoch: p.PartitionEpoch,
		AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
		ELR: p.ELR, LastKnownELR: p.LastKnownELR,
	})
	return string(out)
}

func decodePartition(index int32, value []byte) (PartitionInfo, error) {
	var rec partitionRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return PartitionInfo{}, err
	}
	return PartitionInfo{
		Partition: index, Replicas: slices.Clip(rec.Replicas), Leader: rec.Leader,
		LeaderEpoch: rec.LeaderEpoch, ISR: slices.Clip(rec.ISR), PartitionEpoch: rec.PartitionEpoch,
		AddingReplicas: slices.Clip(rec.AddingReplicas), RemovingReplicas: slices.Clip(rec.RemovingReplicas),
		ELR: nilIfEmpty(rec.ELR), LastKnownELR: nilIfEmpty(rec.LastKnownELR),
	}, nil
}
