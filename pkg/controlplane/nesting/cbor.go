package nesting

import (
	"errors"

	"github.com/fxamacker/cbor/v2"
)

// checkCBOR uses the CBOR decoder's own well-formedness check, which counts
// arrays and maps as levels, as JSON's are counted (its smallest limit is
// 4), and limits each map to Width pairs (not the sum of their squares);
// then, in a well-formed body, it measures the keys that are strings.
func checkCBOR(body []byte, limit int) error {
	mode, err := cbor.DecOptions{MaxNestedLevels: max(limit, 4), MaxMapPairs: Width}.DecMode()
	if err != nil {
		return nil
	}
	var tooDeep *cbor.MaxNestedLevelError
	var tooWide *cbor.MaxMapPairsError
	switch err := mode.Wellformed(body); {
	case errors.As(err, &tooDeep):
		return &Error{Limit: limit}
	case errors.As(err, &tooWide):
		return &Error{Limit: limit, Wide: true}
	case err != nil:
		return nil
	}
	if _, key, _ := cborItem(body); key > KeyLength {
		return &Error{Limit: limit, LongKey: true}
	}
	return nil
}

// cborItem reads one item of well-formed CBOR (RFC 8949) and returns what
// follows it, the length of the longest string that is a map's key within
// it, and its own length if it is a string (a tag counting as what it
// tags), or -1.
func cborItem(data []byte) (rest []byte, key, length int) {
	major, info := data[0]>>5, data[0]&0x1f
	data = data[1:]
	var arg uint64
	if info < 24 {
		arg = uint64(info)
	} else if info <= 27 {
		n := 1 << (info - 24)
		for _, b := range data[:n] {
			arg = arg<<8 | uint64(b)
		}
		data = data[n:]
	}
	indefinite := info == 31
	switch major {
	case 2, 3: // a byte or text string; an indefinite one is definite chunks
		if !indefinite {
			return data[arg:], 0, int(arg)
		}
		total := 0
		for data[0] != 0xff {
			var chunk int
			data, _, chunk = cborItem(data)
			total += chunk
		}
		return data[1:], 0, total
	case 4, 5: // an array, or a map of key and value pairs
		items := arg
		if major == 5 {
			items *= 2
		}
		longest := 0
		for i := uint64(0); indefinite && data[0] != 0xff || !indefinite && i < items; i++ {
			var key, length int
			data, key, length = cborItem(data)
			longest = max(longest, key)
			if major == 5 && i%2 == 0 {
				longest = max(longest, length)
			}
		}
		if indefinite {
			data = data[1:]
		}
		return data, longest, -1
	case 6: // a tag and the item it tags
		return cborItem(data)
	}
	return data, 0, -1 // an integer, a simple value or a float
}
