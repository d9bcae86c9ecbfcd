package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestTypedCollectives(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx := testCtx(t)
			job, err := StartLocal(ctx, n, Config{})
			if err != nil {
				t.Fatal(err)
			}
			err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
				c, err := NewCommunicator(rt, "typed", nil, n-1)
				if err != nil {
					return err
				}
				defer c.Close()
				me := fmt.Sprintf("site-%d", c.Site())
				names, err := AllGatherOf(ctx, c, strings.Repeat(me, c.Site()+1)).Get(ctx)
				if err != nil {
					return err
				}
				for i, s := range names {
					if want := strings.Repeat(fmt.Sprintf("site-%d", i), i+1); s != want {
						return fmt.Errorf("AllGatherOf[%d] = %q, want %q", i, s, want)
					}
				}
				// Not commutative: the site order must hold.
				joined, err := AllReduceOf(ctx, c, fmt.Sprint(c.Site()), func(a, b string) string { return a + "," + b }).Get(ctx)
				if err != nil {
					return err
				}
				var want []string
				for i := range n {
					want = append(want, fmt.Sprint(i))
				}
				if joined != strings.Join(want, ",") {
					return fmt.Errorf("AllReduceOf = %q", joined)
				}
				v := 0
				if c.Site() == c.Root() {
					v = 4242
				}
				got, err := BroadcastOf(ctx, c, v).Get(ctx)
				if err != nil || got != 4242 {
					return fmt.Errorf("BroadcastOf = %d, %v", got, err)
				}
				bytes, err := AllGatherOf(ctx, c, []byte{byte(c.Site()), 7}).Get(ctx)
				if err != nil {
					return err
				}
				for i, b := range bytes {
					if len(b) != 2 || b[0] != byte(i) || b[1] != 7 {
						return fmt.Errorf("AllGatherOf []byte [%d] = %v", i, b)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTypedCollectiveRefusesUntravelledType(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 1, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	c, err := NewCommunicator(job.Localities[0], "bad", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AllGatherOf(ctx, c, map[string]int{}).Get(ctx); err == nil || !strings.Contains(err.Error(), "cannot travel") {
		t.Fatalf("AllGatherOf of a map: %v", err)
	}
}

func TestTypedChannel(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		ch, err := NewChannel(rt, "typed-channel", nil)
		if err != nil {
			return err
		}
		defer ch.Close()
		next, prev := (ch.Site()+1)%ch.Size(), (ch.Site()+ch.Size()-1)%ch.Size()
		if err := SetOf(ctx, ch, next, 7, fmt.Sprintf("from %d", ch.Site())).Err(ctx); err != nil {
			return err
		}
		got, err := GetOf[string](ctx, ch, prev, 7).Get(ctx)
		if err != nil || got != fmt.Sprintf("from %d", prev) {
			return fmt.Errorf("GetOf = %q, %v", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
