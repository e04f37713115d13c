package output

import "testing"

func benchShape(b *testing.B, props map[string]any) {
	s := mustShaper(b, props)
	rows := []map[string]any{{"deviceId": "dev-0042", "temperature": 23.57, "humidity": int64(61), "ok": true}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Shape(rows); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkShapeJSON(b *testing.B) {
	benchShape(b, nil)
}

func BenchmarkShapeSendSingle(b *testing.B) {
	benchShape(b, map[string]any{"sendSingle": true})
}

func BenchmarkShapeFields(b *testing.B) {
	benchShape(b, map[string]any{"sendSingle": true, "fields": []any{"deviceId", "temperature"}})
}

func BenchmarkShapeTemplate(b *testing.B) {
	benchShape(b, map[string]any{"sendSingle": true, "dataTemplate": `{"id":"{{.deviceId}}","t":{{.temperature}}}`})
}

func BenchmarkPropTemplateRender(b *testing.B) {
	p, err := NewPropTemplate("topic", "alerts/{{.deviceId}}")
	if err != nil {
		b.Fatal(err)
	}
	row := map[string]any{"deviceId": "dev-0042"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Render(row); err != nil {
			b.Fatal(err)
		}
	}
}
