package runtime

import (
	"sync"

	"github.com/tessera-amt/tessera/parcel"
)

// outParcel is a parcel this locality sends — a call or a reply — with
// room for small arguments and two chunks. A parcelport's Send is done
// with the parcel when it returns, so these come from a pool (outParcels)
// and go back to it after the send: a call or a reply then costs no
// allocation for its parcel.
type outParcel struct {
	p      parcel.Parcel
	args   [32]byte
	chunks [2][]byte
}

// outParcels is a locality's pool of outParcel.
type outParcels struct{ pool sync.Pool }

// get returns an empty outParcel.
func (o *outParcels) get() *outParcel {
	if out, _ := o.pool.Get().(*outParcel); out != nil {
		return out
	}
	return new(outParcel)
}

// put empties out, so that it keeps none of a caller's memory alive, and
// returns it to the pool.
func (o *outParcels) put(out *outParcel) {
	*out = outParcel{}
	o.pool.Put(out)
}
