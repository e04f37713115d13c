package qualify

import (
	"reflect"
	"testing"
)

// TestValidatorAccounting feeds rows straight into the validator's
// accounting and checks each class of anomaly.
func TestValidatorAccounting(t *testing.T) {
	type in struct {
		payload string
		dup     bool
	}
	for _, tc := range []struct {
		name string
		sent int64
		msgs []in
		want SeqCounts
	}{
		{"clean", 3, []in{{`{"seq":0}`, false}, {`{"seq":1}`, false}, {`[{"seq":2}]`, false}},
			SeqCounts{Sent: 3, Received: 3, Unique: 3}},
		{"lost and reordered", 4, []in{{`{"seq":0}`, false}, {`{"seq":2}`, false}, {`{"seq":1}`, false}},
			SeqCounts{Sent: 4, Received: 3, Unique: 3, Lost: 1, Reordered: 1, FirstLost: []int64{3}}},
		{"pipeline duplicate", 2, []in{{`{"seq":0}`, false}, {`{"seq":1}`, false}, {`{"seq":0}`, false}},
			SeqCounts{Sent: 2, Received: 3, Unique: 2, Duplicated: 1, FirstDupes: []int64{0}}},
		{"publisher retry and broker redelivery", 1, []in{{`{"seq":0}`, false}, {`{"seq":0,"attempt":1}`, false}, {`{"seq":0}`, true}},
			SeqCounts{Sent: 1, Received: 3, Unique: 1, PublisherDuplicates: 1, Redelivered: 1}},
		{"resent marks, unreadable and unexpected", 1, []in{{`{"seq":0,"resent":true}`, false}, {`garbage`, false}, {`{"seq":7}`, false}},
			SeqCounts{Sent: 1, Received: 2, Unique: 2, Resent: 1, Unreadable: 1, Unexpected: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Validator{resentField: "resent", seen: map[int64]int64{}, copies: map[int64]int64{}, maxSeq: -1}
			for _, m := range tc.msgs {
				rows, ok := decodeRows([]byte(m.payload), v.resentField)
				if !ok {
					v.unreadable++
					continue
				}
				for _, r := range rows {
					v.account(r, m.dup)
				}
			}
			got := v.Counts(tc.sent)
			if len(got.FirstDupes) == 0 {
				got.FirstDupes = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("counts\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
