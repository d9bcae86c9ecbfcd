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
// action is registered. encode appends v's small part to args and its
// chunks to chunks, so a caller with room for both allocates neither.
type codec[T any] struct {
	encode func(v T, args []byte, chunks [][]byte) ([]byte, [][]byte, error)
	decode func(args []byte, chunks [][]byte) (T, error)
}

// codecFor picks the codec of T: types with ParcelMarshaler, msgp types
// (go generate), []float64 and []byte as raw chunks, basic types and
// struct{}. Anything else is refused at registration.
func codecFor[T any]() (codec[T], error) {
	var zero T
	if _, ok := any(zero).(ParcelMarshaler); ok {
		if _, ok := any(&zero).(ParcelUnmarshaler); ok {
			return codec[T]{
				encode: func(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) {
					b, own, err := any(v).(ParcelMarshaler).MarshalParcel(b)
					return b, append(c, own...), err
				},
				decode: func(b []byte, c [][]byte) (T, error) {
					var v T
					err := any(&v).(ParcelUnmarshaler).UnmarshalParcel(b, c)
					return v, err
				},
			}, nil
		}
	}
	if _, ok := any(zero).(msgp.Marshaler); ok {
		if _, ok := any(&zero).(msgp.Unmarshaler); ok {
			return codec[T]{
				encode: func(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) {
					b, err := any(v).(msgp.Marshaler).MarshalMsg(b)
					return b, c, err
				},
				decode: func(b []byte, _ [][]byte) (T, error) {
					var v T
					_, err := any(&v).(msgp.Unmarshaler).UnmarshalMsg(b)
					return v, err
				},
			}, nil
		}
	}
	switch any(zero).(type) {
	case []float64:
		return codec[T]{
			encode: func(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) {
				return b, append(c, parcel.Float64Bytes(any(v).([]float64))), nil
			},
			decode: func(_ []byte, c [][]byte) (T, error) {
				if len(c) != 1 {
					return zero, fmt.Errorf("want 1 chunk of float64, got %d", len(c))
				}
				if len(c[0])%8 != 0 {
					return zero, fmt.Errorf("chunk of %d bytes is not a whole number of float64", len(c[0]))
				}
				f := parcel.BytesFloat64(c[0])
				if f == nil && len(c[0]) > 0 { // unaligned memory: copy
					f = hugepage.Float64s(len(c[0]) / 8)
					copy(parcel.Float64Bytes(f), c[0])
				}
				if f == nil {
					f = []float64{}
				}
				return any(f).(T), nil
			},
		}, nil
	case []byte:
		return codec[T]{
			encode: func(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) { return b, append(c, any(v).([]byte)), nil },
			decode: func(_ []byte, c [][]byte) (T, error) {
				if len(c) != 1 {
					return zero, fmt.Errorf("want 1 chunk of bytes, got %d", len(c))
				}
				return any(c[0]).(T), nil
			},
		}, nil
	case struct{}:
		return codec[T]{
			encode: func(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) { return b, c, nil },
			decode: func([]byte, [][]byte) (T, error) { return zero, nil },
		}, nil
	case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return codec[T]{
			encode: func(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) {
				b, err := msgp.AppendIntf(b, any(v))
				return b, c, err
			},
			decode: func(b []byte, _ [][]byte) (T, error) { return decodeBasic[T](b) },
		}, nil
	}
	if c, ok := namedBasicCodec[T](); ok {
		return c, nil
	}
	return codec[T]{}, fmt.Errorf("type %v cannot travel in a parcel: use a basic type, []float64, []byte, "+
		"a msgp type (go generate), or implement ParcelMarshaler/ParcelUnmarshaler", reflect.TypeFor[T]())
}

func decodeBasic[T any](b []byte) (T, error) {
	var v T
	var out any
	var err error
	switch any(v).(type) {
	case string:
		out, _, err = msgp.ReadStringBytes(b)
	case bool:
		out, _, err = msgp.ReadBoolBytes(b)
	case int:
		out, _, err = msgp.ReadIntBytes(b)
	case int8:
		out, _, err = msgp.ReadInt8Bytes(b)
	case int16:
		out, _, err = msgp.ReadInt16Bytes(b)
	case int32:
		out, _, err = msgp.ReadInt32Bytes(b)
	case int64:
		out, _, err = msgp.ReadInt64Bytes(b)
	case uint:
		out, _, err = msgp.ReadUintBytes(b)
	case uint8:
		out, _, err = msgp.ReadUint8Bytes(b)
	case uint16:
		out, _, err = msgp.ReadUint16Bytes(b)
	case uint32:
		out, _, err = msgp.ReadUint32Bytes(b)
	case uint64:
		out, _, err = msgp.ReadUint64Bytes(b)
	case float32:
		out, _, err = msgp.ReadFloat32Bytes(b)
	case float64:
		out, _, err = msgp.ReadFloat64Bytes(b)
	}
	if err != nil {
		return v, err
	}
	return out.(T), nil
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
	return codec[T]{
		encode: func(v T, b []byte, c [][]byte) ([]byte, [][]byte, error) { return enc(reflect.ValueOf(v), b), c, nil },
		decode: func(b []byte, _ [][]byte) (T, error) {
			var v T
			err := dec(b, reflect.ValueOf(&v).Elem())
			return v, err
		},
	}, true
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
