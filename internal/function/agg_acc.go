package function

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/rekuiper/rekuiper/internal/value"
)

// Accumulator folds an aggregate's argument values one row at a time, so a
// window can aggregate rows as they arrive instead of keeping them until it
// fires. It gives exactly the result, and the error, that the Aggregate of
// the same Def gives over the same rows in the same order.
//
// Errors are sticky. As the Aggregate evaluates every argument column before
// folding, an argument that failed to evaluate (Fail) wins over a value the
// fold refused, whichever came first.
type Accumulator interface {
	// Add folds one row's argument values.
	Add(args []any)
	// Fail records that a row's arguments could not be evaluated.
	Fail(err error)
	// Result is the aggregate over the rows added so far.
	Result() (any, error)
	// AppendState encodes the accumulator for a checkpoint.
	AppendState(buf []byte) []byte
	// ReadState loads what AppendState wrote.
	ReadState(r *value.Reader)
}

// accErrors holds the sticky errors shared by every accumulator.
type accErrors struct {
	argErr, stepErr error
}

func (e *accErrors) Fail(err error) {
	if e.argErr == nil {
		e.argErr = err
	}
}

func (e *accErrors) failed() bool { return e.argErr != nil || e.stepErr != nil }

func (e *accErrors) step(err error) {
	if e.stepErr == nil {
		e.stepErr = err
	}
}

func (e *accErrors) err() error {
	if e.argErr != nil {
		return e.argErr
	}
	return e.stepErr
}

// appendState writes a flags byte, then the message of each error present.
// An error comes back from a checkpoint as its message.
func (e *accErrors) appendState(buf []byte) []byte {
	var flags byte
	if e.argErr != nil {
		flags |= 1
	}
	if e.stepErr != nil {
		flags |= 2
	}
	buf = append(buf, flags)
	if e.argErr != nil {
		buf = value.AppendString(buf, e.argErr.Error())
	}
	if e.stepErr != nil {
		buf = value.AppendString(buf, e.stepErr.Error())
	}
	return buf
}

func (e *accErrors) readState(r *value.Reader) {
	flags := r.Byte()
	e.argErr, e.stepErr = nil, nil
	if flags&1 != 0 {
		e.argErr = errors.New(r.String())
	}
	if flags&2 != 0 {
		e.stepErr = errors.New(r.String())
	}
}

// countAcc counts non-nil values.
type countAcc struct {
	accErrors
	n int64
}

func (a *countAcc) Add(args []any) {
	if args[0] != nil {
		a.n++
	}
}

func (a *countAcc) Result() (any, error) {
	if err := a.err(); err != nil {
		return nil, err
	}
	return a.n, nil
}

func (a *countAcc) AppendState(buf []byte) []byte {
	return binary.AppendVarint(a.appendState(buf), a.n)
}

func (a *countAcc) ReadState(r *value.Reader) {
	a.readState(r)
	a.n = r.Varint()
}

// numSum is a running sum with aggAddNumber's typing: int64 while every
// value is an integer, float64 from the first float on.
type numSum struct {
	has, float bool
	i          int64
	f          float64
}

func (s *numSum) value() any {
	switch {
	case !s.has:
		return nil
	case s.float:
		return s.f
	}
	return s.i
}

func (s *numSum) add(v any) error {
	switch x := v.(type) {
	case int64:
		switch {
		case !s.has:
			s.has, s.i = true, x
		case s.float:
			s.f += float64(x)
		default:
			sum := s.i + x
			if (sum > s.i) != (x > 0) {
				return fmt.Errorf("%w: sum %d + %d does not fit in bigint", value.ErrOverflow, s.i, x)
			}
			s.i = sum
		}
		return nil
	case float64:
		switch {
		case !s.has:
			s.has, s.float, s.f = true, true, x
		case s.float:
			s.f += x
		default:
			s.float, s.f = true, float64(s.i)+x
		}
		return nil
	}
	return aggRequiresNumber(s.value(), v)
}

// appendState writes a flags byte (has, float), then the int64 or the
// float64 bits, whichever is live.
func (s *numSum) appendState(buf []byte) []byte {
	var flags byte
	if s.has {
		flags |= 1
	}
	if s.float {
		flags |= 2
	}
	buf = append(buf, flags)
	if s.float {
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(s.f))
	}
	return binary.AppendVarint(buf, s.i)
}

func (s *numSum) readState(r *value.Reader) {
	flags := r.Byte()
	*s = numSum{has: flags&1 != 0, float: flags&2 != 0}
	if s.float {
		if b := r.Bytes(8); len(b) == 8 {
			s.f = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
		return
	}
	s.i = r.Varint()
}

// sumAcc sums non-nil numbers.
type sumAcc struct {
	accErrors
	sum numSum
}

func (a *sumAcc) Add(args []any) {
	if args[0] == nil || a.failed() {
		return
	}
	if err := a.sum.add(args[0]); err != nil {
		a.step(err)
	}
}

func (a *sumAcc) Result() (any, error) {
	if err := a.err(); err != nil {
		return nil, err
	}
	return a.sum.value(), nil
}

func (a *sumAcc) AppendState(buf []byte) []byte { return a.sum.appendState(a.appendState(buf)) }

func (a *sumAcc) ReadState(r *value.Reader) {
	a.readState(r)
	a.sum.readState(r)
}

// avgAcc averages non-nil numbers as float64.
type avgAcc struct {
	sumAcc
	n int64
}

func (a *avgAcc) Add(args []any) {
	if args[0] == nil || a.failed() {
		return
	}
	if err := a.sum.add(args[0]); err != nil {
		a.step(err)
		return
	}
	a.n++
}

func (a *avgAcc) Result() (any, error) {
	if err := a.err(); err != nil {
		return nil, err
	}
	if a.n == 0 {
		return nil, nil
	}
	s, _ := value.ToFloat(a.sum.value())
	return s / float64(a.n), nil
}

func (a *avgAcc) AppendState(buf []byte) []byte {
	return binary.AppendVarint(a.sumAcc.AppendState(buf), a.n)
}

func (a *avgAcc) ReadState(r *value.Reader) {
	a.sumAcc.ReadState(r)
	a.n = r.Varint()
}

// extremeAcc keeps the largest (sign 1) or smallest (sign -1) value.
type extremeAcc struct {
	accErrors
	sign int
	held any
	has  bool
}

func (a *extremeAcc) Add(args []any) {
	v := args[0]
	if v == nil || a.failed() {
		return
	}
	if !a.has {
		if err := aggCheckOrdered(v); err != nil {
			a.step(err)
			return
		}
		a.held, a.has = v, true
		return
	}
	c, err := aggOrder(a.held, v)
	if err != nil {
		a.step(err)
		return
	}
	if c*a.sign > 0 {
		a.held = v
	}
}

func (a *extremeAcc) Result() (any, error) {
	if err := a.err(); err != nil {
		return nil, err
	}
	return a.held, nil
}

func (a *extremeAcc) AppendState(buf []byte) []byte {
	buf = a.appendState(buf)
	if !a.has {
		return append(buf, 0)
	}
	return value.AppendValue(append(buf, 1), a.held)
}

func (a *extremeAcc) ReadState(r *value.Reader) {
	a.readState(r)
	a.has, a.held = r.Byte() == 1, nil
	if a.has {
		a.held = r.Value()
	}
}

// newAccumulator returns the accumulator constructor of an aggregate that
// can fold row by row, or nil.
func newAccumulator(name string) func() Accumulator {
	switch name {
	case "count":
		return func() Accumulator { return &countAcc{} }
	case "sum":
		return func() Accumulator { return &sumAcc{} }
	case "avg":
		return func() Accumulator { return &avgAcc{} }
	case "max":
		return func() Accumulator { return &extremeAcc{sign: 1} }
	case "min":
		return func() Accumulator { return &extremeAcc{sign: -1} }
	}
	return nil
}
