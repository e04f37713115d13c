package membus

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a/b/c", false},
		{"a/+/c", "a/x/c", true},
		{"+", "a", true},
		{"+", "a/b", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"a/#", "b/a", false},
		{"#", "x/y", true},
		{"a/b", "a/b/c", false},
		{"a/b/c", "a/b", false},
	}
	for _, tc := range tests {
		t.Run(tc.filter+" "+tc.topic, func(t *testing.T) {
			if got := MatchString(tc.filter, tc.topic); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		s                 string
		filterOK, topicOK bool
	}{
		{"a/b", true, true},
		{"a/+/c", true, false},
		{"a/#", true, false},
		{"a/#/c", false, false},
		{"a/b+", false, false},
		{"", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.s, func(t *testing.T) {
			if err := ValidFilter(tc.s); (err == nil) != tc.filterOK {
				t.Errorf("ValidFilter = %v", err)
			}
			if err := ValidTopic(tc.s); (err == nil) != tc.topicOK {
				t.Errorf("ValidTopic = %v", err)
			}
		})
	}
}

func TestPublishRoutes(t *testing.T) {
	b := New()
	all, _ := b.Subscribe("#", 10)
	one, _ := b.Subscribe("dev/+/temp", 10)
	defer all.Close()
	defer one.Close()
	ctx := context.Background()
	for _, topic := range []string{"dev/1/temp", "dev/1/hum", "dev/2/temp"} {
		if err := b.Publish(ctx, Message{Topic: topic, Data: map[string]any{"t": topic}}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		sub  *Subscription
		want []string
	}{
		{"all", all, []string{"dev/1/temp", "dev/1/hum", "dev/2/temp"}},
		{"filtered", one, []string{"dev/1/temp", "dev/2/temp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				m, err := tc.sub.Receive(ctx)
				if err != nil || m.Topic != w {
					t.Fatalf("got %q, %v; want %q", m.Topic, err, w)
				}
			}
			short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			if m, err := tc.sub.Receive(short); err == nil {
				t.Fatalf("unexpected extra message %v", m)
			}
		})
	}
	t.Run("wildcard topic refused", func(t *testing.T) {
		if err := b.Publish(ctx, Message{Topic: "a/+"}); err == nil {
			t.Fatal("published to a wildcard topic")
		}
	})
}

func TestBackpressure(t *testing.T) {
	tests := []struct {
		name    string
		release func(cancel context.CancelFunc, sub *Subscription)
		wantErr bool
	}{
		{"reader frees room", func(_ context.CancelFunc, sub *Subscription) { sub.Receive(context.Background()) }, false},
		{"ctx cancelled", func(cancel context.CancelFunc, _ *Subscription) { cancel() }, true},
		{"subscriber closes", func(_ context.CancelFunc, sub *Subscription) { sub.Close() }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			sub, _ := b.Subscribe("t", 1)
			defer sub.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := b.Publish(ctx, Message{Topic: "t"}); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- b.Publish(ctx, Message{Topic: "t"}) }()
			select {
			case err := <-done:
				t.Fatalf("publish did not block on a full subscriber: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
			tc.release(cancel, sub)
			select {
			case err := <-done:
				if (err != nil) != tc.wantErr {
					t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
				}
				if tc.wantErr && !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("publish stayed blocked")
			}
		})
	}
}

func TestClose(t *testing.T) {
	b := New()
	sub, _ := b.Subscribe("t", 1)
	if b.Subscribers() != 1 {
		t.Fatalf("subscribers = %d", b.Subscribers())
	}
	sub.Close()
	sub.Close()
	if b.Subscribers() != 0 {
		t.Fatalf("subscribers after close = %d", b.Subscribers())
	}
	if _, err := sub.Receive(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestSplit(t *testing.T) {
	one := Message{Topic: "t", Data: map[string]any{"a": 1}, Rowkind: "delete", Key: 1}
	if got := one.Split(); len(got) != 1 || got[0].Rowkind != "delete" || got[0].Data["a"] != 1 {
		t.Fatalf("split of one row: %+v", got)
	}
	two := Message{Topic: "t", Rows: []map[string]any{{"a": 1}, {"a": 2}}}
	got := two.Split()
	if len(got) != 2 || got[0].Data["a"] != 1 || got[1].Data["a"] != 2 || got[1].Topic != "t" || got[1].Rows != nil {
		t.Fatalf("split of two rows: %+v", got)
	}
}
