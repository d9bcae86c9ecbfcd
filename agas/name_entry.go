package agas

import "github.com/tinylib/msgp/msgp"

// nameEntry is a name and the GID registered under it, as a parcel carries
// it to the name's home.
type nameEntry struct {
	Name string
	GID  GID
}

// MarshalParcel implements runtime.ParcelMarshaler.
func (e nameEntry) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	b = msgp.AppendString(b, e.Name)
	return msgp.AppendUint64(b, uint64(e.GID)), nil, nil
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler.
func (e *nameEntry) UnmarshalParcel(b []byte, _ [][]byte) error {
	var err error
	if e.Name, b, err = msgp.ReadStringBytes(b); err != nil {
		return err
	}
	var g uint64
	g, _, err = msgp.ReadUint64Bytes(b)
	e.GID = GID(g)
	return err
}
