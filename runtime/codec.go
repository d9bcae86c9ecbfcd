package runtime

import (
	"fmt"
	"reflect"

	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tinylib/msgp/msgp"
)

// ParcelMarshaler is implemented by argument and result types that carry
// bulk data: small fields go into the msgp-encoded arguments, bulk memory
// into raw chunks that travel without per-element encoding.
type ParcelMarshaler interface {
	MarshalParcel(args []byte) ([]byte, [][]byte, error)
}

// ParcelUnmarshaler decodes what ParcelMarshaler produced. It may keep the
// chunks: they belong to it.
type ParcelUnmarshaler interface {
	UnmarshalParcel(args []byte, chunks [][]byte) error
}

// codec encodes values of one type for parcels. It is chosen once, when an
// action is registered, and is a plain value: choosing one allocates
// nothing, so layers above the runtime (NewCodec) may choose one per
// message. encode appends v's small part to args and its chunks to chunks,
// so a caller with room for both allocates neither.
type codec[T any] struct {
	kind codecKind
	// A named type over a basic kind (kindNamed): its reflection-based
	// encoding (namedBasicCodec).
	enc func(v reflect.Value, b []byte) []byte
	dec func(b []byte, v reflect.Value) error
}

// codecKind is how a codec encodes its type.
type codecKind uint8

const (
	kindNone     codecKind = iota // the zero codec: T cannot travel
	kindParcel                    // ParcelMarshaler and ParcelUnmarshaler
	kindMsgp                      // msgp.Marshaler and msgp.Unmarshaler
	kindFloat64s                  // []float64, one raw chunk
	kindBytes                     // []byte, one raw chunk
	kindEmpty                     // struct{}: nothing
	kindBasic                     // a basic type, msgp-encoded
	kindNamed                     // a named type over a basic kind
)

// codecFor picks the codec of T: types with ParcelMarshaler, msgp types
// (go generate), []float64 and []byte as raw chunks, basic types and
// struct{}. Anything else is refused at registration.
func codecFor[T any]() (codec[T], error) {
	var zero T
	if _, ok := any(zero).(ParcelMarshaler); ok {
		if _, ok := any((*T)(nil)).(ParcelUnmarshaler); ok {
			return codec[T]{kind: kindParcel}, nil
		}
	}
	if _, ok := any(zero).(msgp.Marshaler); ok {
		if _, ok := any((*T)(nil)).(msgp.Unmarshaler); ok {
			return codec[T]{kind: kindMsgp}, nil
		}
	}
	switch any(zero).(type) {
	case []float64:
		return codec[T]{kind: kindFloat64s}, nil
	case []byte:
		return codec[T]{kind: kindBytes}, nil
	case struct{}:
		return codec[T]{kind: kindEmpty}, nil
	case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return codec[T]{kind: kindBasic}, nil
	}
	if c, ok := namedBasicCodec[T](); ok {
		return c, nil
	}
	return codec[T]{}, fmt.Errorf("type %v cannot travel in a parcel: use a basic type, []float64, []byte, "+
		"a msgp type (go generate), or implement ParcelMarshaler/ParcelUnmarshaler", reflect.TypeFor[T]())
}

// encode appends v's small part to b and its chunks to c.
func (k codec[T]) encode(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) {
	switch k.kind {
	case kindParcel:
		b, own, err := any(v).(ParcelMarshaler).MarshalParcel(b)
		return b, append(c, own...), err
	case kindMsgp:
		b, err := any(v).(msgp.Marshaler).MarshalMsg(b)
		return b, c, err
	case kindFloat64s:
		return b, append(c, parcel.Float64Bytes(any(v).([]float64))), nil
	case kindBytes:
		return b, append(c, any(v).([]byte)), nil
	case kindEmpty:
		return b, c, nil
	case kindBasic:
		return encodeBasic(b, v), c, nil
	case kindNamed:
		return k.enc(reflect.ValueOf(v), b), c, nil
	}
	return b, c, fmt.Errorf("type %v cannot travel in a parcel", reflect.TypeFor[T]())
}

// decode rebuilds a value from what encode produced.
func (k codec[T]) decode(b []byte, c [][]byte) (T, error) {
	var v T
	switch k.kind {
	case kindParcel:
		return decodeParcel[T](b, c)
	case kindMsgp:
		return decodeMsgp[T](b)
	case kindFloat64s:
		if len(c) != 1 {
			return v, fmt.Errorf("want 1 chunk of float64, got %d", len(c))
		}
		if len(c[0])%8 != 0 {
			return v, fmt.Errorf("chunk of %d bytes is not a whole number of float64", len(c[0]))
		}
		f := parcel.BytesFloat64(c[0])
		if f == nil && len(c[0]) > 0 { // unaligned memory: copy
			f = hugepage.Float64s(len(c[0]) / 8)
			copy(parcel.Float64Bytes(f), c[0])
		}
		if f == nil {
			f = []float64{}
		}
		*any(&v).(*[]float64) = f
		return v, nil
	case kindBytes:
		if len(c) != 1 {
			return v, fmt.Errorf("want 1 chunk of bytes, got %d", len(c))
		}
		*any(&v).(*[]byte) = c[0]
		return v, nil
	case kindEmpty:
		return v, nil
	case kindBasic:
		err := decodeBasic(b, any(&v))
		return v, err
	case kindNamed:
		return decodeNamed[T](b, k.dec)
	}
	return v, fmt.Errorf("type %v cannot travel in a parcel", reflect.TypeFor[T]())
}

// decodeParcel, decodeMsgp and decodeNamed decode through a pointer to
// the value (T's methods, reflection): functions of their own, so that
// only these kinds' values move to the heap.
func decodeParcel[T any](b []byte, c [][]byte) (T, error) {
	var v T
	err := any(&v).(ParcelUnmarshaler).UnmarshalParcel(b, c)
	return v, err
}

func decodeMsgp[T any](b []byte) (T, error) {
	var v T
	_, err := any(&v).(msgp.Unmarshaler).UnmarshalMsg(b)
	return v, err
}

func decodeNamed[T any](b []byte, dec func([]byte, reflect.Value) error) (T, error) {
	var v T
	err := dec(b, reflect.ValueOf(&v).Elem())
	return v, err
}

// encodeBasic appends v, of a basic type, msgp-encoded.
func encodeBasic[T any](b []byte, v T) []byte {
	switch x := any(v).(type) {
	case string:
		return msgp.AppendString(b, x)
	case bool:
		return msgp.AppendBool(b, x)
	case int:
		return msgp.AppendInt(b, x)
	case int8:
		return msgp.AppendInt8(b, x)
	case int16:
		return msgp.AppendInt16(b, x)
	case int32:
		return msgp.AppendInt32(b, x)
	case int64:
		return msgp.AppendInt64(b, x)
	case uint:
		return msgp.AppendUint(b, x)
	case uint8:
		return msgp.AppendUint8(b, x)
	case uint16:
		return msgp.AppendUint16(b, x)
	case uint32:
		return msgp.AppendUint32(b, x)
	case uint64:
		return msgp.AppendUint64(b, x)
	case float32:
		return msgp.AppendFloat32(b, x)
	case float64:
		return msgp.AppendFloat64(b, x)
	}
	panic(fmt.Sprintf("encodeBasic of %T", v)) // codecFor chose kindBasic for these types only
}

// decodeBasic reads *v, v a pointer to a basic type, msgp-encoded. It is
// not generic, so v's target can stay on its caller's stack.
func decodeBasic(b []byte, v any) error {
	var err error
	switch p := v.(type) {
	case *string:
		*p, _, err = msgp.ReadStringBytes(b)
	case *bool:
		*p, _, err = msgp.ReadBoolBytes(b)
	case *int:
		*p, _, err = msgp.ReadIntBytes(b)
	case *int8:
		*p, _, err = msgp.ReadInt8Bytes(b)
	case *int16:
		*p, _, err = msgp.ReadInt16Bytes(b)
	case *int32:
		*p, _, err = msgp.ReadInt32Bytes(b)
	case *int64:
		*p, _, err = msgp.ReadInt64Bytes(b)
	case *uint:
		*p, _, err = msgp.ReadUintBytes(b)
	case *uint8:
		*p, _, err = msgp.ReadUint8Bytes(b)
	case *uint16:
		*p, _, err = msgp.ReadUint16Bytes(b)
	case *uint32:
		*p, _, err = msgp.ReadUint32Bytes(b)
	case *uint64:
		*p, _, err = msgp.ReadUint64Bytes(b)
	case *float32:
		*p, _, err = msgp.ReadFloat32Bytes(b)
	case *float64:
		*p, _, err = msgp.ReadFloat64Bytes(b)
	default:
		panic("decodeBasic: not a pointer to a basic type") // codecFor chose kindBasic for these types only
	}
	return err
}

// namedBasicCodec encodes named types over basic kinds (type GID uint64,
// type Op string) like their underlying type.
func namedBasicCodec[T any]() (codec[T], bool) {
	rt := reflect.TypeFor[T]()
	var enc func(v reflect.Value, b []byte) []byte
	var dec func(b []byte, v reflect.Value) error
	switch rt.Kind() {
	case reflect.Bool:
		enc = func(v reflect.Value, b []byte) []byte { return msgp.AppendBool(b, v.Bool()) }
		dec = func(b []byte, v reflect.Value) error {
			x, _, err := msgp.ReadBoolBytes(b)
			v.SetBool(x)
			return err
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		enc = func(v reflect.Value, b []byte) []byte { return msgp.AppendInt64(b, v.Int()) }
		dec = func(b []byte, v reflect.Value) error {
			x, _, err := msgp.ReadInt64Bytes(b)
			if err == nil && v.OverflowInt(x) {
				err = fmt.Errorf("%d overflows %v", x, v.Type())
			}
			v.SetInt(x)
			return err
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		enc = func(v reflect.Value, b []byte) []byte { return msgp.AppendUint64(b, v.Uint()) }
		dec = func(b []byte, v reflect.Value) error {
			x, _, err := msgp.ReadUint64Bytes(b)
			if err == nil && v.OverflowUint(x) {
				err = fmt.Errorf("%d overflows %v", x, v.Type())
			}
			v.SetUint(x)
			return err
		}
	case reflect.Float32, reflect.Float64:
		enc = func(v reflect.Value, b []byte) []byte { return msgp.AppendFloat64(b, v.Float()) }
		dec = func(b []byte, v reflect.Value) error {
			x, _, err := msgp.ReadFloat64Bytes(b)
			v.SetFloat(x)
			return err
		}
	case reflect.String:
		enc = func(v reflect.Value, b []byte) []byte { return msgp.AppendString(b, v.String()) }
		dec = func(b []byte, v reflect.Value) error {
			x, _, err := msgp.ReadStringBytes(b)
			v.SetString(x)
			return err
		}
	default:
		return codec[T]{}, false
	}
	return codec[T]{kind: kindNamed, enc: enc, dec: dec}, true
}

// Codec encodes values of T for parcels exactly as actions encode their
// arguments and results: small values msgp-encoded into the arguments,
// []float64 and []byte (and ParcelMarshaler bulk data) as raw chunks.
// Layers above the runtime use it to carry typed values inside their own
// messages.
type Codec[T any] struct{ c codec[T] }

// NewCodec returns the codec of T, or an error if T cannot travel.
func NewCodec[T any]() (Codec[T], error) {
	c, err := codecFor[T]()
	return Codec[T]{c}, err
}

// Encode appends v's small part to args and returns its chunks.
func (c Codec[T]) Encode(v T, args []byte) ([]byte, [][]byte, error) { return c.c.encode(v, args, nil) }

// Decode rebuilds a value from what Encode produced.
func (c Codec[T]) Decode(args []byte, chunks [][]byte) (T, error) { return c.c.decode(args, chunks) }
