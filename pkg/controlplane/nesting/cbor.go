package nesting

import (
	"errors"

	"github.com/fxamacker/cbor/v2"
)

// checkCBOR uses the CBOR decoder's own well-formedness check, which counts
// arrays and maps as levels, as JSON's are counted (its smallest limit is
// 4), and limits each map to Width pairs (not the sum of their squares).
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
	}
	return nil
}
