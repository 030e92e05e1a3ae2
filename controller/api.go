package controller

// API CONTRACT STUB: the controller helper replaces these bodies (keep the signatures;
// additions are fine). The broker is written against exactly these.

import (
	"context"
	"log/slog"
)

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Name             string // listener name, e.g. PLAINTEXT
	Host             string
	Port             int32
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
}

type Config struct {
	NodeID    int32
	Rack      string
	Endpoints []Endpoint // advertised listeners, registered under the lease
	DataDir   string     // embedded etcd's data directory
	// EtcdEndpoints, when set, uses that etcd instead of embedding one (etcd.endpoints).
	EtcdEndpoints []string
	// Prefix namespaces every key (etcd.prefix, default "/strait").
	Prefix string
	// LeaseTTLSeconds is the broker registration lease (default 10).
	LeaseTTLSeconds int64
	Logger          *slog.Logger
}

type BrokerInfo struct {
	NodeID    int32
	Rack      string
	Endpoints []Endpoint
}

type PartitionInfo struct {
	Partition      int32
	Replicas       []int32
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
}

type TopicInfo struct {
	Name       string
	ID         [16]byte
	Internal   bool
	Configs    map[string]string // only the topic-level overrides
	Partitions []PartitionInfo   // index == partition number
}

type CreateTopicRequest struct {
	Name              string
	NumPartitions     int32
	ReplicationFactor int16
	Assignments       map[int32][]int32 // explicit replica assignment, optional
	Configs           map[string]string
	ValidateOnly      bool
	Internal          bool
}

// TopicChange is delivered to listeners in etcd revision order.
type TopicChange struct {
	Topic   TopicInfo
	Deleted bool
}

type Controller struct{}

func New(cfg Config) (*Controller, error)                     { panic("stub") }
func (c *Controller) Start(ctx context.Context) error         { panic("stub") }
func (c *Controller) Close() error                            { panic("stub") }
func (c *Controller) ClusterID() string                       { panic("stub") }
func (c *Controller) ControllerID() int32                     { panic("stub") }
func (c *Controller) Brokers() []BrokerInfo                   { panic("stub") }
func (c *Controller) Topics() []TopicInfo                     { panic("stub") }
func (c *Controller) Topic(name string) (TopicInfo, bool)     { panic("stub") }
func (c *Controller) TopicByID(id [16]byte) (TopicInfo, bool) { panic("stub") }
func (c *Controller) CreateTopic(ctx context.Context, req CreateTopicRequest) (TopicInfo, error) {
	panic("stub")
}
func (c *Controller) DeleteTopic(ctx context.Context, name string) error { panic("stub") }
func (c *Controller) Listen(fn func(TopicChange))                        { panic("stub") }
