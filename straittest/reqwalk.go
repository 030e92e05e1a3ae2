package straittest

// Reading what a request names (topics, partitions, groups) and building
// an error response for any request, both by walking kmsg's structs: kmsg
// names the same things the same way in every message (Topic, TopicID,
// Partitions, Partition, Group, ErrorCode), and a response mirrors its
// request's topics and partitions.

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicRef is a topic a request names, by name or id, with the
// partitions it names (nil: none named).
type topicRef struct {
	name       string
	id         [16]byte
	partitions []int32
}

// refs is what a request names.
type refs struct {
	topics   []topicRef
	topicIDs int // how many refs are by id only
	groups   []string
}

// requestRefs returns the topics, partitions and groups req names.
func requestRefs(req kmsg.Request) refs {
	var r refs
	if req == nil {
		return r
	}
	walkRefs(reflect.ValueOf(req).Elem(), "", &r)
	if fc, ok := req.(*kmsg.FindCoordinatorRequest); ok && fc.CoordinatorType == 0 {
		r.groups = append(r.groups, fc.CoordinatorKey)
		r.groups = append(r.groups, fc.CoordinatorKeys...)
	}
	return r
}

var int32Type = reflect.TypeFor[int32]()

func walkRefs(v reflect.Value, inSlice string, r *refs) {
	if v.Kind() != reflect.Struct {
		return
	}
	var ref topicRef
	named := false
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		switch {
		case f.Name == "Topic" || (f.Name == "Name" && inSlice == "Topics"):
			if s, ok := stringOf(fv); ok {
				ref.name, named = s, true
				continue
			}
		case f.Name == "TopicID" && fv.Type() == reflect.TypeFor[[16]byte]():
			if id := fv.Interface().([16]byte); id != [16]byte{} {
				ref.id, named = id, true
			}
			continue
		case f.Name == "Partitions" && fv.Kind() == reflect.Slice:
			ref.partitions = []int32{}
			for j := range fv.Len() {
				e := fv.Index(j)
				switch {
				case e.Type() == int32Type:
					ref.partitions = append(ref.partitions, int32(e.Int()))
				case e.Kind() == reflect.Struct:
					if p := e.FieldByName("Partition"); p.IsValid() && p.Type() == int32Type {
						ref.partitions = append(ref.partitions, int32(p.Int()))
					}
				}
			}
			continue
		case f.Name == "Group" && fv.Kind() == reflect.String:
			r.groups = append(r.groups, fv.String())
			continue
		case (f.Name == "Groups" || f.Name == "TopicNames") && fv.Type() == reflect.TypeFor[[]string]():
			for j := range fv.Len() {
				if f.Name == "Groups" {
					r.groups = append(r.groups, fv.Index(j).String())
				} else {
					r.topics = append(r.topics, topicRef{name: fv.Index(j).String()})
				}
			}
			continue
		}
		switch fv.Kind() {
		case reflect.Slice:
			for j := range fv.Len() {
				walkRefs(fv.Index(j), f.Name, r)
			}
		case reflect.Struct:
			walkRefs(fv, f.Name, r)
		}
	}
	if named {
		r.topics = append(r.topics, ref)
		if ref.name == "" {
			r.topicIDs++
		}
	}
}

// stringOf is v as a string if it is a string or a non-nil *string.
func stringOf(v reflect.Value) (string, bool) {
	switch {
	case v.Kind() == reflect.String:
		return v.String(), true
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.String && !v.IsNil():
		return v.Elem().String(), true
	}
	return "", false
}

// ErrorResponse returns the response to req (at its version) that fails
// it with code: every topic, partition, group or key the request names is
// in the response with code in its ErrorCode, as a broker answering that
// error for all of them would; a request that names none gets code in the
// response's top-level ErrorCode. It is what Rule.Err answers, for use in
// a Rule.Respond that fails some parts only.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rv := reflect.ValueOf(resp).Elem()
	if !mirror(reflect.ValueOf(req).Elem(), rv, code) {
		if ec := rv.FieldByName("ErrorCode"); ec.IsValid() && ec.Kind() == reflect.Int16 {
			ec.SetInt(int64(code))
		}
	}
	return resp
}

// sliceAliases are the response slices that mirror a request slice of
// another name.
var sliceAliases = map[string]string{"Coordinators": "CoordinatorKeys"}

// mirror fills dst's slices of structs with one element per element of
// src's slice of the same name (or alias), copying the fields both have
// (Topic, TopicID, Partition, Group, ...) and setting ErrorCode to code,
// and recursing. It reports whether any element was made.
func mirror(src, dst reflect.Value, code int16) bool {
	made := false
	dt := dst.Type()
	for i := range dt.NumField() {
		f, df := dt.Field(i), dst.Field(i)
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		name := f.Name
		if a, ok := sliceAliases[name]; ok {
			name = a
		}
		sf := src.FieldByName(name)
		if !sf.IsValid() || sf.Kind() != reflect.Slice {
			continue
		}
		out := reflect.MakeSlice(f.Type, 0, sf.Len())
		for j := range sf.Len() {
			e := reflect.New(f.Type.Elem()).Elem()
			if d := e.Addr().MethodByName("Default"); d.IsValid() {
				d.Call(nil)
			}
			fillElem(sf.Index(j), e, code)
			out = reflect.Append(out, e)
		}
		df.Set(out)
		made = made || sf.Len() > 0
	}
	return made
}

// fillElem makes dst, one response element, mirror src, its request
// element (a struct, or an int32 partition, or a string group or key).
func fillElem(src, dst reflect.Value, code int16) {
	if ec := dst.FieldByName("ErrorCode"); ec.IsValid() && ec.Kind() == reflect.Int16 {
		ec.SetInt(int64(code))
	}
	switch src.Kind() {
	case reflect.Int32:
		if p := dst.FieldByName("Partition"); p.IsValid() && p.Type() == int32Type {
			p.SetInt(src.Int())
		}
		return
	case reflect.String:
		for _, n := range []string{"Group", "Key", "Topic", "Name"} {
			if f := dst.FieldByName(n); f.IsValid() && f.Kind() == reflect.String {
				f.SetString(src.String())
				return
			}
		}
		return
	case reflect.Struct:
	default:
		return
	}
	for _, n := range copiedFields {
		df, sf := dst.FieldByName(n), src.FieldByName(n)
		if df.IsValid() && sf.IsValid() && sf.Type() == df.Type() {
			df.Set(sf)
		}
	}
	mirror(src, dst, code)
}

// copiedFields are the fields that say which topic, partition, group or
// resource a response element answers for.
var copiedFields = []string{"Topic", "TopicID", "Partition", "Group", "Name", "Key",
	"ResourceType", "ResourceName", "TransactionalID"}
