package protocol

import (
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Error codes used by this package (Kafka's Errors enum).
const (
	errInvalidRequest      int16 = 42
	errUnsupportedVersion  int16 = 35
	errRebootstrapRequired int16 = 129
)

// SupportedFeature is a KIP-584 feature the broker can run, with the range of
// levels it supports.
type SupportedFeature struct {
	Name       string
	MinVersion int16
	MaxVersion int16
}

// FinalizedFeature is the level of a feature in effect in the cluster.
type FinalizedFeature struct {
	Name  string
	Level int16
}

// Features is the feature part of an ApiVersions v3+ response.
type Features struct {
	Supported []SupportedFeature
	Finalized []FinalizedFeature
	// Epoch is FinalizedFeaturesEpoch: Kafka sends the offset of the metadata
	// image the levels come from; Strait sends its metadata revision.
	Epoch int64
}

// Kafka44Features is what Strait advertises: the feature levels of a Kafka
// 4.4 broker running metadata.version 4.4-IV2 (level 33, 4.4's latest
// production level), as formatted by the 4.4 storage tool with a static
// controller quorum (so kraft.version is finalized at 0 and not listed),
// with the given epoch. Only the features whose levels Strait implements are
// listed: share.version at level 1 (KIP-932 share groups; level 2, the dead
// letter queue of KIP-1191, is not served), streams.version at level 1
// (KIP-1071 streams groups), and eligible.leader.replicas.version at level
// 1 (KIP-966, which Kafka enables on new clusters from 4.1). From
// MetadataVersion.java and the feature enums at 4.4 (franz-go kversion f44).
func Kafka44Features(epoch int64) Features {
	return Features{
		Supported: []SupportedFeature{
			{"eligible.leader.replicas.version", 0, 1},
			{"group.version", 0, 1},
			{"kraft.version", 0, 1},
			{"metadata.version", 7, 33},
			{"share.version", 0, 1},
			{"streams.version", 0, 1},
			{"transaction.version", 0, 2},
		},
		Finalized: []FinalizedFeature{
			{"eligible.leader.replicas.version", 1},
			{"group.version", 1},
			{"metadata.version", 33},
			{"share.version", 1},
			{"streams.version", 1},
			{"transaction.version", 2},
		},
		Epoch: epoch,
	}
}

// ApiVersionsResponse builds the answer to req as Kafka 4's
// KafkaApis.handleApiVersionsRequest does:
//
//   - an unsupported version (req.UnsupportedVersion): v0, UNSUPPORTED_VERSION,
//     and only the ApiVersions key with its range (KIP-511), so the client can
//     retry at a version the broker speaks;
//   - v3+ with a client software name or version not matching
//     [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?: INVALID_REQUEST, no keys;
//   - otherwise every key in table sorted by key with its advertised range
//     (Max capped at what kmsg decodes), and for v3+ the features: supported
//     features whose minimum is 0 are left out below v4 (KAFKA-17492, old
//     clients reject them) and finalized features at level 0 are always left out.
func ApiVersionsResponse(req *Request, table VersionTable, f Features) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(req.Body.GetVersion())
	if req.UnsupportedVersion {
		resp.ErrorCode = errUnsupportedVersion
		if vr, _, ok := decodableRange(table, apiVersionsKey); ok {
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{apiKeyEntry(apiVersionsKey, vr)}
		}
		return resp
	}
	if invalidClientSoftware(req) {
		resp.ErrorCode = errInvalidRequest
		return resp
	}

	keys := make([]int16, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	resp.ApiKeys = make([]kmsg.ApiVersionsResponseApiKey, 0, len(keys))
	maxDecodable := kmsgMaxVersions()
	for _, k := range keys {
		kmsgMax, ok := maxDecodable[k]
		if !ok {
			continue
		}
		vr := table[k]
		vr.Max = min(vr.Max, kmsgMax)
		resp.ApiKeys = append(resp.ApiKeys, apiKeyEntry(k, vr))
	}
	if resp.Version < 3 {
		return resp
	}
	supported := append([]SupportedFeature(nil), f.Supported...)
	sort.Slice(supported, func(i, j int) bool { return supported[i].Name < supported[j].Name })
	for _, s := range supported {
		if resp.Version < 4 && s.MinVersion == 0 {
			continue
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = s.Name, s.MinVersion, s.MaxVersion
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	finalized := append([]FinalizedFeature(nil), f.Finalized...)
	sort.Slice(finalized, func(i, j int) bool { return finalized[i].Name < finalized[j].Name })
	for _, fin := range finalized {
		if fin.Level == 0 {
			continue
		}
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = fin.Name, fin.Level, fin.Level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = f.Epoch
	return resp
}

// kmsgMaxVersions is, for every API key kmsg knows, the newest version it
// decodes: what decodableRange caps the table with, computed once rather
// than with a new request value per key on every ApiVersions.
var kmsgMaxVersions = sync.OnceValue(func() map[int16]int16 {
	m := make(map[int16]int16)
	for k := int16(0); k <= maxAPIKeyProbe; k++ {
		if body := kmsg.RequestForKey(k); body != nil {
			m[k] = body.MaxVersion()
		}
	}
	return m
})

// maxAPIKeyProbe bounds the keys kmsgMaxVersions asks kmsg about (Kafka's
// keys stop below 100).
const maxAPIKeyProbe = 200

func apiKeyEntry(key int16, vr VersionRange) kmsg.ApiVersionsResponseApiKey {
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = key, vr.Min, vr.Max
	return k
}

// validSoftwareNameOrVersion matches Kafka's
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? (ApiVersionsRequest.isValid).
func validSoftwareNameOrVersion(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ApiVersionsFrames answers ApiVersions from bodies encoded once per
// version: every client connection opens with one, and the answer depends
// only on the version (and on the table and features, fixed for the
// frames' life). Requests answered with an error (an unsupported version,
// invalid client software fields) are encoded afresh. Safe for concurrent
// use.
type ApiVersionsFrames struct {
	table    VersionTable
	features Features
	once     [apiVersionsCachedVersions]sync.Once
	bodies   [apiVersionsCachedVersions][]byte
	// identity is the cluster id and node id a v5+ request is checked
	// against (SetIdentity); nil checks nothing.
	identity func() (clusterID string, nodeID int32)
}

// SetIdentity sets what ApiVersions v5+ (KIP-1242) checks a request's
// cluster id and node id against. Call it before the first request.
func (f *ApiVersionsFrames) SetIdentity(fn func() (clusterID string, nodeID int32)) {
	f.identity = fn
}

// identityError is KIP-1242's check of a v5+ request: a cluster id and node
// id are both set or both unset (else INVALID_REQUEST), and when set they
// must be this broker's (else REBOOTSTRAP_REQUIRED: the client reached the
// wrong broker or cluster and should start over from its bootstrap servers).
func (f *ApiVersionsFrames) identityError(req *Request) int16 {
	body, ok := req.Body.(*kmsg.ApiVersionsRequest)
	if !ok || body.Version < 5 || req.UnsupportedVersion {
		return 0
	}
	hasCluster, hasNode := body.ClusterID != nil, body.NodeID != -1
	switch {
	case hasCluster != hasNode:
		return errInvalidRequest
	case !hasCluster || f.identity == nil:
		return 0
	}
	cluster, node := f.identity()
	if *body.ClusterID != cluster || body.NodeID != node {
		return errRebootstrapRequired
	}
	return 0
}

// apiVersionsCachedVersions bounds the versions cached (0-5 today; a newer
// one kmsg learns is encoded afresh until this grows).
const apiVersionsCachedVersions = 8

// NewApiVersionsFrames returns frames for table with Kafka44Features(0).
func NewApiVersionsFrames(table VersionTable) *ApiVersionsFrames {
	return NewApiVersionsFramesWith(table, Kafka44Features(0))
}

// NewApiVersionsFramesWith returns frames for table with features f.
func NewApiVersionsFramesWith(table VersionTable, f Features) *ApiVersionsFrames {
	return &ApiVersionsFrames{table: table, features: f}
}

// AppendResponse appends the whole response frame for req (size,
// correlation id, body) to dst, as AppendResponse(dst, req,
// ApiVersionsResponse(req, table, features)) would; a v5+ request naming
// another cluster or node gets only its error (identityError), as Kafka's
// ApiVersionsRequest.getErrorResponse answers.
func (f *ApiVersionsFrames) AppendResponse(dst []byte, req *Request) []byte {
	v := req.Body.GetVersion()
	if code := f.identityError(req); code != 0 {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(v)
		resp.ErrorCode = code
		return AppendResponse(dst, req, resp)
	}
	if req.UnsupportedVersion || v < 0 || int(v) >= apiVersionsCachedVersions || invalidClientSoftware(req) {
		return AppendResponse(dst, req, ApiVersionsResponse(req, f.table, f.features))
	}
	f.once[v].Do(func() {
		resp := ApiVersionsResponse(req, f.table, f.features)
		resp.SetVersion(v)
		f.bodies[v] = resp.AppendTo(nil)
	})
	body := f.bodies[v]
	// The response header is v0 (no tagged fields) at every version.
	dst = kbin.AppendInt32(dst, int32(4+len(body)))
	dst = kbin.AppendInt32(dst, req.CorrelationID)
	return append(dst, body...)
}

// invalidClientSoftware reports whether a v3+ request's client software
// name or version is invalid (answered with INVALID_REQUEST).
func invalidClientSoftware(req *Request) bool {
	body, ok := req.Body.(*kmsg.ApiVersionsRequest)
	return ok && body.Version >= 3 &&
		(!validSoftwareNameOrVersion(body.ClientSoftwareName) || !validSoftwareNameOrVersion(body.ClientSoftwareVersion))
}
