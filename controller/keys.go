package controller

import (
	"strconv"
	"strings"

	"github.com/strait/strait/quota"
)

// keyspace builds and parses the etcd keys described in the package comment.
type keyspace struct {
	prefix string // without a trailing slash, e.g. "/strait"
}

// keyKind says which part of the layout a key belongs to.
type keyKind int

const (
	keyUnknown keyKind = iota
	keyClusterID
	keyBroker
	keyElection
	keyTopic
	keyPartition
	keyScram         // scram/<user>/<mechanism> (credentials.go)
	keyToken         // delegation_tokens/<token id> (tokens.go)
	keyGroupConfig   // configs/groups/<group id> (group_configs.go)
	keyACL           // acls/<id> (acls.go)
	keyQuota         // client_quotas/... (quotas.go)
	keyClientMetrics // configs/client_metrics/<name> (client_metrics_configs.go)
	keyFeatures      // features (features.go)
)

const (
	clusterIDSegment  = "cluster_id"
	brokersSegment    = "brokers/"
	electionSegment   = "controller/election"
	topicsSegment     = "topics/"
	partitionsSegment = "partitions/"
)

// root is the prefix every key starts with.
func (k keyspace) root() string             { return k.prefix + "/" }
func (k keyspace) clusterID() string        { return k.root() + clusterIDSegment }
func (k keyspace) broker(id int32) string   { return k.root() + brokersSegment + strconv.Itoa(int(id)) }
func (k keyspace) election() string         { return k.root() + electionSegment }
func (k keyspace) topic(name string) string { return k.root() + topicsSegment + name }
func (k keyspace) partitionRange(name string) string {
	return k.root() + partitionsSegment + name + "/"
}
func (k keyspace) partition(name string, p int32) string {
	return k.partitionRange(name) + strconv.Itoa(int(p))
}

// parsedKey is a key split into its parts; which fields are set depends on kind.
type parsedKey struct {
	kind      keyKind
	nodeID    int32        // keyBroker
	topic     string       // keyTopic, keyPartition
	partition int32        // keyPartition
	user      string       // keyScram
	mechanism string       // keyScram
	tokenID   string       // keyToken
	group     string       // keyGroupConfig; keyClientMetrics: the subscription name
	aclID     string       // keyACL
	quota     quota.Entity // keyQuota
}

// parse classifies a key read from etcd. Keys that do not fit the layout are
// keyUnknown and ignored by the cache.
func (k keyspace) parse(key string) parsedKey {
	rest, ok := strings.CutPrefix(key, k.root())
	if !ok {
		return parsedKey{}
	}
	switch {
	case rest == clusterIDSegment:
		return parsedKey{kind: keyClusterID}
	case rest == featuresSegment:
		return parsedKey{kind: keyFeatures}
	case strings.HasPrefix(rest, electionSegment+"/"):
		return parsedKey{kind: keyElection}
	case strings.HasPrefix(rest, brokersSegment):
		id, err := strconv.ParseInt(rest[len(brokersSegment):], 10, 32)
		if err != nil {
			return parsedKey{}
		}
		return parsedKey{kind: keyBroker, nodeID: int32(id)}
	case strings.HasPrefix(rest, topicsSegment):
		name := rest[len(topicsSegment):]
		if name == "" || strings.Contains(name, "/") {
			return parsedKey{}
		}
		return parsedKey{kind: keyTopic, topic: name}
	case strings.HasPrefix(rest, partitionsSegment):
		name, p, ok := strings.Cut(rest[len(partitionsSegment):], "/")
		if !ok || name == "" {
			return parsedKey{}
		}
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return parsedKey{}
		}
		return parsedKey{kind: keyPartition, topic: name, partition: int32(n)}
	case strings.HasPrefix(rest, scramSegment), strings.HasPrefix(rest, tokensSegment):
		return parseAuthKey(rest)
	case strings.HasPrefix(rest, groupConfigsSegment):
		return parseGroupConfigKey(rest)
	case strings.HasPrefix(rest, clientMetricsSegment):
		return parseClientMetricsKey(rest)
	case strings.HasPrefix(rest, aclsSegment):
		return parseACLKey(rest)
	case strings.HasPrefix(rest, quotasSegment):
		return parseQuotaKey(rest)
	}
	return parsedKey{}
}
