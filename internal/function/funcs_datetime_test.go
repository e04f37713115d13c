package function

import (
	"testing"
	"time"
)

func TestDatetimeCorpus(t *testing.T) {
	env := miscTestEnv{now: time.UnixMilli(1700000000137)}
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skipf("no tzdata: %v", err)
	}
	miscRun(t, env, []miscCase{
		// gen_func_datetime/convert_tz (the format_time half)
		{name: "convert_tz/sh", fn: "format_time", args: []any{time.UnixMilli(1700000000123).In(shanghai), "yyyy-MM-dd HH:mm"}, want: "2023-11-15 06:13"},
		{name: "convert_tz/u", fn: "format_time", args: []any{time.UnixMilli(1700000000123).UTC(), "yyyy-MM-dd HH:mm"}, want: "2023-11-14 22:13"},
		{name: "convert_tz/sh0", fn: "format_time", args: []any{time.UnixMilli(0).In(shanghai), "yyyy-MM-dd HH:mm"}, want: "1970-01-01 08:00"},
		// gen_func_datetime/datetime_nil (quirk: eKuiper errors "unsupported type to convert to timestamp <nil>")
		{name: "datetime_nil/h", fn: "hour", args: []any{nil}, want: nil},
		{name: "datetime_nil/y", fn: "format_time", args: []any{nil, "yyyy"}, want: nil},
		{name: "datetime_nil/u", fn: "from_unix_time", args: []any{nil}, want: nil},
		// gen_func_datetime/format_time (quirk: eKuiper writes "ss.SSS" as "20..123")
		{name: "format_time/f1_1", fn: "format_time", args: []any{int64(1700000000123), "yyyy-MM-dd HH:mm:ss.SSS"}, want: "2023-11-14 22:13:20.123"},
		{name: "format_time/f2_1", fn: "format_time", args: []any{int64(1700000000123), "yyyy/MM/dd"}, want: "2023/11/14"},
		{name: "format_time/f3_1", fn: "format_time", args: []any{"2023-11-14 22:13:20", "HH:mm"}, want: "22:13"},
		{name: "format_time/f1_2", fn: "format_time", args: []any{int64(946684800000), "yyyy-MM-dd HH:mm:ss.SSS"}, want: "2000-01-01 00:00:00.000"},
		{name: "format_time/f2_2", fn: "format_time", args: []any{int64(946684800000), "yyyy/MM/dd"}, want: "2000/01/01"},
		{name: "format_time/f3_2", fn: "format_time", args: []any{"2000-01-01 00:00:00", "HH:mm"}, want: "00:00"},
		{name: "format_time/f1_3", fn: "format_time", args: []any{int64(1709251199999), "yyyy-MM-dd HH:mm:ss.SSS"}, want: "2024-02-29 23:59:59.999"},
		{name: "format_time/f2_3", fn: "format_time", args: []any{int64(1709251199999), "yyyy/MM/dd"}, want: "2024/02/29"},
		{name: "format_time/f3_3", fn: "format_time", args: []any{"2024-02-29 23:59:59", "HH:mm"}, want: "23:59"},
		// gen_func_datetime/format_time_patterns
		{name: "format_time_patterns/a1", fn: "format_time", args: []any{int64(1700000000123), "EEE, dd MMM yy"}, want: "Tue, 14 Nov 23"},
		{name: "format_time_patterns/b1", fn: "format_time", args: []any{int64(1700000000123), "EEEE MMMM d"}, want: "Tuesday November 14"},
		{name: "format_time_patterns/c1", fn: "format_time", args: []any{int64(1700000000123), "hh:mm a"}, want: "10:13 PM"},
		{name: "format_time_patterns/d1", fn: "format_time", args: []any{int64(1700000000123), "yyyyMMddHHmmss"}, want: "20231114221320"},
		{name: "format_time_patterns/e1", fn: "format_time", args: []any{int64(1700000000123), "HH:mm:ssSSS"}, want: "22:13:20.123"},
		{name: "format_time_patterns/a2", fn: "format_time", args: []any{int64(946730096789), "EEE, dd MMM yy"}, want: "Sat, 01 Jan 00"},
		{name: "format_time_patterns/b2", fn: "format_time", args: []any{int64(946730096789), "EEEE MMMM d"}, want: "Saturday January 1"},
		{name: "format_time_patterns/c2", fn: "format_time", args: []any{int64(946730096789), "hh:mm a"}, want: "12:34 PM"},
		{name: "format_time_patterns/d2", fn: "format_time", args: []any{int64(946730096789), "yyyyMMddHHmmss"}, want: "20000101123456"},
		{name: "format_time_patterns/e2", fn: "format_time", args: []any{int64(946730096789), "HH:mm:ssSSS"}, want: "12:34:56.789"},
		// gen_func_datetime/now_virtual_clock (first event; now() is a datetime, see funcs_datetime.go)
		{name: "now_virtual_clock/n", fn: "now", args: nil, want: time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)},
		{name: "now_virtual_clock/ct", fn: "cur_time", args: nil, want: "22:13:20"},
		{name: "now_virtual_clock/c2", fn: "current_timestamp", args: nil, want: time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)},
		// gen_func_datetime/parts_from_string
		{name: "parts_from_string/h1", fn: "hour", args: []any{"2023-11-14 22:13:20"}, want: int64(22)},
		{name: "parts_from_string/dy1", fn: "day_of_year", args: []any{"2023-11-14 22:13:20"}, want: int64(318)},
		{name: "parts_from_string/mo1", fn: "month", args: []any{"2023-11-14 22:13:20"}, want: int64(11)},
		{name: "parts_from_string/h2", fn: "hour", args: []any{"2000-01-01 00:00:00"}, want: int64(0)},
		{name: "parts_from_string/dy2", fn: "day_of_year", args: []any{"2000-01-01 00:00:00"}, want: int64(1)},
		{name: "parts_from_string/mo2", fn: "month", args: []any{"2000-01-01 00:00:00"}, want: int64(1)},
		{name: "parts_from_string/h3", fn: "hour", args: []any{"2024-02-29 23:59:59"}, want: int64(23)},
		{name: "parts_from_string/dy3", fn: "day_of_year", args: []any{"2024-02-29 23:59:59"}, want: int64(60)},
		{name: "parts_from_string/mo3", fn: "month", args: []any{"2024-02-29 23:59:59"}, want: int64(2)},
	})
}

func TestDatetimeFunctions(t *testing.T) {
	env := miscTestEnv{now: time.UnixMilli(1700000000137)} // 2023-11-14 22:13:20.137 UTC, a Tuesday
	ts := int64(1700000000123)
	miscRun(t, env, []miscCase{
		{name: "now fsp 3", fn: "now", args: []any{int64(3)}, want: time.UnixMilli(1700000000137).UTC()},
		{name: "now fsp 1", fn: "local_timestamp", args: []any{int64(1)}, want: time.UnixMilli(1700000000100).UTC()},
		{name: "now bad fsp", fn: "local_time", args: []any{int64(7)}, wantErr: "precision"},
		{name: "cur_time fsp", fn: "current_time", args: []any{int64(2)}, want: "22:13:20.13"},
		{name: "cur_date", fn: "cur_date", args: nil, want: "2023-11-14"},
		{name: "current_date", fn: "current_date", args: nil, want: "2023-11-14"},
		{name: "date_calc", fn: "date_calc", args: []any{ts, "1h30m"}, want: time.UnixMilli(ts + 90*60*1000).UTC()},
		{name: "date_calc negative", fn: "date_calc", args: []any{"2019-01-01 00:00:00", "-1h30m"}, want: time.Date(2018, 12, 31, 22, 30, 0, 0, time.UTC)},
		{name: "date_calc days", fn: "date_calc", args: []any{"2019-01-01", "-1d"}, want: time.Date(2018, 12, 31, 0, 0, 0, 0, time.UTC)},
		{name: "date_calc mixed days", fn: "date_calc", args: []any{"2019-01-01", "1d12h"}, want: time.Date(2019, 1, 2, 12, 0, 0, 0, time.UTC)},
		{name: "date_calc bad", fn: "date_calc", args: []any{ts, "soon"}, wantErr: "invalid duration"},
		{name: "date_diff", fn: "date_diff", args: []any{"2019-01-01", "2019-01-02"}, want: int64(24 * time.Hour)},
		{name: "day_name", fn: "day_name", args: []any{ts}, want: "Tuesday"},
		{name: "month_name", fn: "month_name", args: []any{ts}, want: "November"},
		{name: "day_of_month", fn: "day_of_month", args: []any{ts}, want: int64(14)},
		{name: "day", fn: "day", args: []any{ts}, want: int64(14)},
		{name: "day_of_week", fn: "day_of_week", args: []any{ts}, want: int64(2)},
		{name: "minute", fn: "minute", args: []any{ts}, want: int64(13)},
		{name: "second", fn: "second", args: []any{ts}, want: int64(20)},
		{name: "microsecond", fn: "microsecond", args: []any{ts}, want: int64(123000)},
		{name: "part of datetime", fn: "hour", args: []any{time.Date(2020, 1, 1, 7, 0, 0, 0, time.UTC)}, want: int64(7)},
		{name: "part bad string", fn: "hour", args: []any{"noon"}, wantErr: "cannot convert"},
		{name: "last_day", fn: "last_day", args: []any{"2024-02-10"}, want: "2024-02-29"},
		{name: "last_day december", fn: "last_day", args: []any{"2023-12-31 23:00:00"}, want: "2023-12-31"},
		{name: "from_days 1", fn: "from_days", args: []any{int64(1)}, want: "1970-01-01"},
		{name: "from_days 366", fn: "from_days", args: []any{int64(366)}, want: "1971-01-01"},
		{name: "from_days 0", fn: "from_days", args: []any{int64(0)}, want: nil},
		{name: "from_unix_time", fn: "from_unix_time", args: []any{int64(1700000000)}, want: time.Unix(1700000000, 0).UTC()},
		// diff_funcs/from_unix_time_zero: 0 is nil, as in eKuiper.
		{name: "from_unix_time zero", fn: "from_unix_time", args: []any{int64(0)}, want: nil},
		{name: "from_unix_time zero float", fn: "from_unix_time", args: []any{0.0}, want: nil},
		// diff_funcs/from_unix_time_fraction: whole seconds only, as in eKuiper.
		{name: "from_unix_time whole float", fn: "from_unix_time", args: []any{2.0}, want: time.Unix(2, 0).UTC()},
		{name: "from_unix_time fraction", fn: "from_unix_time", args: []any{1.5}, wantErr: "cannot convert float64(1.5) to int"},
		{name: "from_unix_time string", fn: "from_unix_time", args: []any{"1"}, wantErr: "unix seconds"},
		{name: "format_time bad pattern type", fn: "format_time", args: []any{ts, int64(1)}, wantErr: "format should be a string"},
	})
}

func TestDatetimeLocation(t *testing.T) {
	loc := time.FixedZone("X", 8*3600)
	env := miscTestEnv{now: time.UnixMilli(1700000000137), loc: loc}
	got, err := miscCall(t, env, "now")
	if err != nil {
		t.Fatal(err)
	}
	if tm := got.(time.Time); tm.Location() != loc || tm.Hour() != 6 {
		t.Fatalf("now() = %v, want 06:13:20 in the env location", tm)
	}
	s, err := miscCall(t, env, "cur_date")
	if err != nil || s != "2023-11-15" {
		t.Fatalf("cur_date() = %v, %v; want 2023-11-15", s, err)
	}
	h, err := miscCall(t, env, "hour", int64(1700000000123))
	if err != nil || h != int64(6) {
		t.Fatalf("hour(epoch ms) = %v, %v; want 6 in the env location", h, err)
	}
}

func TestDatetimeFormatPatterns(t *testing.T) {
	tm := time.Date(2024, 3, 5, 0, 7, 9, 45_600_000, time.FixedZone("CET", 3600))
	cases := []struct{ pattern, want string }{
		{"yy yyyy YY YYYY", "24 2024 24 2024"},
		{"M MM MMM MMMM", "3 03 Mar March"},
		{"d dd D DDD", "5 05 65 065"},
		{"EEE EEEE", "Tue Tuesday"},
		{"HH k K h hh a", "00 24 0 12 12 AM"},
		{"m mm s ss", "7 07 9 09"},
		{"ss.S", "09.0"},
		{"ss.SS", "09.04"},
		{"ssSSSSSS", "09.045600"},
		{"z Z ZZZZZ", "CET +0100 +01:00"},
		{"X XX XXX", "+01 +0100 +01:00"},
		{"G", "AD"},
		{"'at' HH 'o''clock' ''", "at 00 o'clock '"},
		{"yyyy-MM-dd'T'HH:mm", "2024-03-05T00:07"},
		{"Q", "Q"},
	}
	for _, bad := range []string{"y", "yyy", "yyyyy", "Y-MM", "H:mm", "E", "EE"} {
		if got, err := datetimeFormat(tm, bad); err == nil {
			t.Errorf("datetimeFormat(%q) = %q, want an error (eKuiper refuses the pattern)", bad, got)
		}
	}
	for _, c := range cases {
		t.Run(c.pattern, func(t *testing.T) {
			got, err := datetimeFormat(tm, c.pattern)
			if err != nil || got != c.want {
				t.Fatalf("datetimeFormat(%q) = %q, %v; want %q", c.pattern, got, err, c.want)
			}
		})
	}
	t.Run("unterminated quote", func(t *testing.T) {
		if _, err := datetimeFormat(tm, "'abc"); err == nil {
			t.Fatal("want error")
		}
	})
	t.Run("utc X", func(t *testing.T) {
		got, _ := datetimeFormat(tm.UTC(), "X")
		if got != "Z" {
			t.Fatalf("got %q, want Z", got)
		}
	})
}
