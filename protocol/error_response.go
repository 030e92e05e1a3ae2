package protocol

import (
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse builds the response to req with code in every ErrorCode field,
// for requests the broker cannot serve (Kafka's AbstractRequest.getErrorResponse
// does the same per API by hand).
//
// It works by reflection over kmsg's generated structs, mirroring the request
// into the response:
//
//   - every int16 field named ErrorCode, at any depth, is set to code;
//   - a response field that is a slice of structs gets one element per element
//     of the request slice of the same name (or TopicNames -> Topics and
//     CoordinatorKeys -> Coordinators), each element starting from kmsg's
//     defaults and filled recursively;
//   - when the request slice holds plain values (OffsetFetch partitions as
//     []int32, DescribeGroups groups as []string, DeleteTopics v0-5 names),
//     the value goes into the first field of the response element of that type;
//   - identifiers are copied from request to response elements when the field
//     has the same name and type: strings, nullable strings, UUIDs, and int32
//     fields whose name contains "Partition";
//   - record fields ([]byte named Records or RecordBatches) are empty, not null,
//     as Kafka sends MemoryRecords.EMPTY;
//   - offsets (BaseOffset, HighWatermark, LastStableOffset, LogStartOffset,
//     Offset) are -1, as in Kafka's error responses.
//
// Everything else keeps kmsg's defaults. The response has req's body version.
func ErrorResponse(req *Request, code int16) kmsg.Response {
	resp := req.Body.ResponseKind()
	resp.SetVersion(req.Body.GetVersion())
	rv := reflect.ValueOf(resp).Elem()
	mirrorError(reflect.ValueOf(req.Body).Elem(), rv, code)
	resp.SetVersion(req.Body.GetVersion())
	return resp
}

var (
	uuidType  = reflect.TypeOf([16]byte{})
	bytesType = reflect.TypeOf([]byte(nil))
)

// invalidOffsetFields are offsets Kafka's error responses set to -1 where
// kmsg's defaults are 0 (ProduceResponse.PartitionResponse(error),
// FetchResponse.partitionResponse(error), OffsetFetch INVALID_OFFSET).
var invalidOffsetFields = map[string]bool{
	"BaseOffset":       true,
	"HighWatermark":    true,
	"LastStableOffset": true,
	"LogStartOffset":   true,
	"Offset":           true,
}

// sliceAliases maps a response slice field to the request field it mirrors
// when the names differ.
var sliceAliases = map[string]string{
	"Topics":       "TopicNames",      // DeleteTopics v0-5
	"Coordinators": "CoordinatorKeys", // FindCoordinator v4+
}

// mirrorError fills the response struct resp from the request struct req
// (req may be the zero Value when there is nothing to mirror).
func mirrorError(req, resp reflect.Value, code int16) {
	rt := resp.Type()
	for i := 0; i < rt.NumField(); i++ {
		sf := rt.Field(i)
		if !sf.IsExported() || sf.Name == "Version" {
			continue
		}
		f := resp.Field(i)
		switch {
		case sf.Name == "ErrorCode" && f.Kind() == reflect.Int16:
			f.SetInt(int64(code))
		case f.Kind() == reflect.Int64 && invalidOffsetFields[sf.Name]:
			f.SetInt(-1)
		case f.Type() == bytesType && (sf.Name == "Records" || sf.Name == "RecordBatches"):
			f.SetBytes([]byte{})
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			src := requestField(req, sf.Name)
			if !src.IsValid() || src.Kind() != reflect.Slice || src.Len() == 0 {
				if alias, ok := sliceAliases[sf.Name]; ok {
					src = requestField(req, alias)
				}
			}
			if !src.IsValid() || src.Kind() != reflect.Slice || src.Len() == 0 {
				continue
			}
			out := reflect.MakeSlice(f.Type(), src.Len(), src.Len())
			for j := 0; j < src.Len(); j++ {
				elem := out.Index(j)
				if d, ok := elem.Addr().Interface().(interface{ Default() }); ok {
					d.Default()
				}
				if s := src.Index(j); s.Kind() == reflect.Struct {
					mirrorError(s, elem, code)
				} else {
					setFirstOfType(elem, s)
					mirrorError(reflect.Value{}, elem, code)
				}
			}
			f.Set(out)
		case isIdentifier(sf):
			if src := requestField(req, sf.Name); src.IsValid() && src.Type() == f.Type() {
				f.Set(src)
			}
		}
	}
}

func isIdentifier(sf reflect.StructField) bool {
	t := sf.Type
	switch {
	case t.Kind() == reflect.String, t == uuidType:
		return true
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.String:
		return true
	case t.Kind() == reflect.Int32:
		return strings.Contains(sf.Name, "Partition")
	}
	return false
}

func requestField(req reflect.Value, name string) reflect.Value {
	if !req.IsValid() || req.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return req.FieldByName(name)
}

// setFirstOfType stores v in the first field of struct elem whose type is
// v's type, or a pointer to it (error fields excluded).
func setFirstOfType(elem, v reflect.Value) {
	for i := 0; i < elem.NumField(); i++ {
		f := elem.Field(i)
		if sf := elem.Type().Field(i); !sf.IsExported() || strings.HasPrefix(sf.Name, "Error") {
			continue
		}
		if f.Type() == v.Type() {
			f.Set(v)
			return
		}
		if f.Kind() == reflect.Pointer && f.Type().Elem() == v.Type() {
			p := reflect.New(v.Type())
			p.Elem().Set(v)
			f.Set(p)
			return
		}
	}
}
