package parcel

// DialHandshake is dialHandshake, for the conformance tests of package
// parcel_test, which open byte streams to socket ports by hand.
var DialHandshake = dialHandshake
