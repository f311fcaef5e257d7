// Package nesting measures how deeply a request body nests objects and lists
// within one another, in each media type the API server decodes, without
// decoding it into objects.
//
// Parts of the request path cost time proportional to the square of an
// object's depth (json-patch's merge patch re-encodes each level's subtree;
// the custom resource read path walks it again per level), so one body of
// 60 KB nested 10,000 levels deep held the CPU for seconds and the heap for
// hundreds of MiB; and the field manager's cost grows with the square of one
// map's members. Check bounds the depth and the width before any of that
// runs, in time linear in the body's size.
package nesting

import "fmt"

// Limit is how many levels of objects and lists within one another a request
// body may have: {"a":{"b":[1]}} has three. The deepest objects Kubernetes'
// own types make are about 16 levels (a CronJob), and a CRD whose schema
// embeds a CronJob's is about 35; managed fields follow an object's shape
// four levels down. 100 leaves room for all of these and keeps the
// quadratic parts of the request path cheap (docs/security.md).
const Limit = 100

// Width is how many members one object (a map) of a request body may have,
// fewer when several are that large: the members of each object, squared
// and summed over the body, may be at most Width squared. The field manager
// keeps each object's field paths in a sorted slice and inserts each member
// where it belongs, so its time grows with that sum: 60,000 keys of one
// ConfigMap took 3.3 s of CPU before the object was refused as too large
// for etcd, and a 3 MiB body holds 250,000, in one object or in twelve of
// 20,000. At the limit it is about 0.4 s.
const Width = 20000

// KeyLength is how many bytes long one member name (a map key) of a request
// body may be, as the body writes it. Kubernetes' own keys are at most 253
// bytes (a ConfigMap's or Secret's data), or 317 (a label or annotation: a
// 253-byte prefix, a slash, 63 bytes), and a CRD's property names are
// field names. A key is copied, validated, quoted into each error that names
// it and into the managed fields many times over: a 2 MiB key cost 0.3 s of
// CPU and seconds on a loaded machine before it was refused as invalid. 64
// KiB is two hundred times the longest key Kubernetes makes, and costs a
// request a few milliseconds at most.
const KeyLength = 64 << 10

// Error says that a body nests deeper than the limit, that one of its
// objects has more members than Width, or that one of its member names is
// longer than KeyLength.
type Error struct {
	// Limit is the number of levels allowed.
	Limit int
	// Where says where in the body the limit was passed, when known (a JSON
	// patch operation's path).
	Where string
	// Wide says the body passed Width, not Limit.
	Wide bool
	// LongKey says the body has a member name longer than KeyLength.
	LongKey bool
}

func (e *Error) Error() string {
	where := ""
	if e.Where != "" {
		where = " (" + e.Where + ")"
	}
	if e.LongKey {
		return fmt.Sprintf("a member name (a key) in the request body is too long%s; gcp accepts keys of at most %d bytes",
			where, KeyLength)
	}
	if e.Wide {
		return fmt.Sprintf("the objects in the request body have too many members%s; gcp accepts at most %d "+
			"keys in one object, fewer when several objects are that large (the members of each object, "+
			"squared and summed, at most %d squared)", where, Width, Width)
	}
	return fmt.Sprintf("the request body nests objects and lists more than %d levels deep%s; "+
		"gcp accepts at most %d levels of nesting", e.Limit, where, e.Limit)
}

// Media types, as the API server names them.
const (
	mediaJSON           = "application/json"
	mediaMergePatch     = "application/merge-patch+json"
	mediaStrategicPatch = "application/strategic-merge-patch+json"
	mediaJSONPatch      = "application/json-patch+json"
	mediaYAML           = "application/yaml"
	mediaApplyYAML      = "application/apply-patch+yaml"
	mediaCBOR           = "application/cbor"
	mediaApplyCBOR      = "application/apply-patch+cbor"
	mediaProtobuf       = "application/vnd.kubernetes.protobuf"
)

// Check returns an *Error when body, of the given media type (without
// parameters; "" is JSON, as the API server reads it), nests more than limit
// levels deep. A body Check cannot read, or of a media type the API server
// does not decode, passes: the handler that decodes it answers for it. For a
// JSON patch, each operation counts the segments of its path as levels, since
// that is where its value lands.
func Check(mediaType string, body []byte, limit int) error {
	switch mediaType {
	case "", mediaJSON, mediaMergePatch, mediaStrategicPatch:
		return checkJSON(body, limit, Width)
	case mediaJSONPatch:
		return checkJSONPatch(body, limit)
	case mediaYAML, mediaApplyYAML:
		return checkYAML(body, limit)
	case mediaCBOR, mediaApplyCBOR:
		return checkCBOR(body, limit)
	case mediaProtobuf:
		if protobufDepth(body, limit) > limit {
			return &Error{Limit: limit}
		}
		if protobufLoad(body) > Width*Width {
			return &Error{Limit: limit, Wide: true}
		}
	}
	return nil
}
