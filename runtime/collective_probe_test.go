package runtime

import (
	"errors"
	"strings"
	"testing"
)

// Gather against Scatter on two sites exchanges no message: each waits for
// the other. The probes find the mismatch, and both sites fail naming both.
func TestMismatchWithoutMessagesIsFound(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 2, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	errs := make([]error, 2)
	done := make(chan int, 2)
	for i, rt := range job.Localities {
		go func() {
			c, err := NewCommunicator(rt, "probe", nil, 0)
			if err != nil {
				errs[i] = err
				done <- i
				return
			}
			if i == 0 {
				_, errs[i] = c.Gather(ctx, []float64{1}).Get(ctx)
			} else {
				_, errs[i] = c.Scatter(ctx, nil).Get(ctx)
			}
			done <- i
		}()
	}
	<-done
	<-done
	for i, err := range errs {
		var me *MismatchError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), "Gather") || !strings.Contains(err.Error(), "Scatter") {
			t.Errorf("site %d: %v, want a mismatch naming Gather and Scatter", i, err)
		}
	}
}
