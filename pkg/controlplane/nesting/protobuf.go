package nesting

import "bytes"

// protobufMagic begins the API server's protobuf encoding, before the
// runtime.Unknown envelope that holds the object.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// protobufDepth returns how deeply messages nest in data, or limit+1 once it
// passes limit. Protobuf does not say which fields are messages, so a
// length-delimited field counts as a message when its bytes read as one
// whole (field numbers above zero, known wire types, lengths inside it).
// The envelope (runtime.Unknown, and the object's bytes inside it) is not
// counted, so an object's depth is its JSON form's or less: a list of
// messages is one level here, two in JSON.
func protobufDepth(data []byte, limit int) int {
	if !bytes.HasPrefix(data, protobufMagic) {
		return messageDepth(data, limit, 0)
	}
	// The envelope is one level more than the object it holds.
	return max(messageDepth(data[len(protobufMagic):], limit+1, 0)-1, 0)
}

// messageDepth returns the depth of data read as a message whose fields are
// at level depth+1, or -1 when data does not read as a message. It stops at
// limit+1.
func messageDepth(data []byte, limit, depth int) int {
	level := depth + 1
	deepest := level
	for len(data) > 0 {
		key, n := uvarint(data)
		if n <= 0 || key>>3 == 0 {
			return -1
		}
		data = data[n:]
		switch key & 7 {
		case 0: // varint
			_, n = uvarint(data)
			if n <= 0 {
				return -1
			}
			data = data[n:]
		case 1: // 64-bit
			if len(data) < 8 {
				return -1
			}
			data = data[8:]
		case 5: // 32-bit
			if len(data) < 4 {
				return -1
			}
			data = data[4:]
		case 2: // length-delimited: bytes, a string, or a message
			length, n := uvarint(data)
			if n <= 0 || length > uint64(len(data)-n) {
				return -1
			}
			field := data[n : n+int(length)]
			data = data[n+int(length):]
			if len(field) == 0 || level >= limit+1 {
				continue
			}
			if d := messageDepth(field, limit, level); d > deepest {
				deepest = d
				if deepest > limit {
					return deepest
				}
			}
		default: // groups are not used, and 6 and 7 are not wire types
			return -1
		}
	}
	if level > limit {
		return level
	}
	return deepest
}

// uvarint reads a protobuf varint; n <= 0 when data does not begin with one.
func uvarint(data []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(data) && i < 10; i++ {
		b := data[i]
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// protobufLoad returns, for each message in data, the fields that are
// themselves messages (map entries, items of a repeated message), squared
// and summed. Only those count: protobuf does not say which fields are
// messages, and a string such as "xxxx" reads as a message of varints.
func protobufLoad(data []byte) int {
	load, _ := messageLoad(bytes.TrimPrefix(data, protobufMagic), Limit+1)
	return load
}

// messageLoad returns the load of data read as a message, down to depth
// levels, and whether it reads as one.
func messageLoad(data []byte, depth int) (int, bool) {
	messages, load := 0, 0
	for len(data) > 0 {
		key, n := uvarint(data)
		if n <= 0 || key>>3 == 0 {
			return 0, false
		}
		data = data[n:]
		switch key & 7 {
		case 0:
			if _, n = uvarint(data); n <= 0 {
				return 0, false
			}
			data = data[n:]
		case 1:
			if len(data) < 8 {
				return 0, false
			}
			data = data[8:]
		case 5:
			if len(data) < 4 {
				return 0, false
			}
			data = data[4:]
		case 2:
			length, n := uvarint(data)
			if n <= 0 || length > uint64(len(data)-n) {
				return 0, false
			}
			if depth > 0 && length > 0 {
				if sub, ok := messageLoad(data[n:n+int(length)], depth-1); ok {
					messages++
					load += sub
				}
			}
			data = data[n+int(length):]
		default:
			return 0, false
		}
	}
	return load + messages*messages, true
}
