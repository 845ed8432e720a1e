package closed

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func sampleRows(gains bool) (*Experiment, []Row) {
	e := &Experiment{Procs: 2, Jobs: []int{3}, Policies: []Policy{FCFS, LJFS}, Service: Service{Dist: Exponential, Mean: 1, CV: 1},
		IOMean: 0.5, Warmup: 10, Completions: 100, Replications: 2, Seed: 1}
	est := func(m float64) Estimate { return Estimate{Mean: m, HalfWidth: m / 10} }
	rows := []Row{
		{Policy: FCFS, Jobs: 3, Summary: Summary{est(2), est(3), est(1), est(0.5), est(0.25)}},
		{Policy: LJFS, Jobs: 3, Summary: Summary{est(1.5), est(2.5), est(1.2), est(0.6), est(0.3)}},
	}
	if gains {
		rows[0].Gains = &Gains{}
		rows[1].Gains = &Gains{DRT: 0.25, DK: 1.0 / 6, DR: 0.2}
	}
	return e, rows
}

func TestWriteCSV(t *testing.T) {
	e, rows := sampleRows(true)
	var b bytes.Buffer
	if err := Write(&b, "csv", e, rows); err != nil {
		t.Fatal(err)
	}
	want := `policy,jobs,mean_response,mean_response_hw,mean_cycle,mean_cycle_hw,throughput,throughput_hw,cpu_util,cpu_util_hw,io_util,io_util_hw,d_rt,d_k,d_r,procs,dist,cv,service_mean,io_mean
fcfs,3,2,0.2,3,0.3,1,0.1,0.5,0.05,0.25,0.025,0,0,0,2,exp,1,1,0.5
ljfs,3,1.5,0.15,2.5,0.25,1.2,0.12,0.6,0.06,0.3,0.03,0.25,0.16666666666666666,0.2,2,exp,1,1,0.5
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	_, rows = sampleRows(false)
	b.Reset()
	if err := Write(&b, "csv", e, rows); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(b.String(), "\n"); strings.Contains(head, "d_rt") {
		t.Errorf("gains columns without fcfs: %s", head)
	}
}

func TestWriteTableAndJSON(t *testing.T) {
	e, rows := sampleRows(true)
	var b bytes.Buffer
	if err := Write(&b, "table", e, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 processors", "exp (m=1, C=1)", "k=0.5", "2 per point", "mean_response", "D_RT", "1.500 ± 0.150", "0.6000 ± 0.0600", "25.0%", "16.7%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Write(&b, "json", e, rows); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Experiment Experiment
		Rows       []Row
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Experiment.Procs != 2 || len(got.Rows) != 2 || got.Rows[1].Response.Mean != 1.5 || got.Rows[1].Gains.DRT != 0.25 {
		t.Errorf("round trip: %+v", got)
	}
	if err := Write(&b, "xml", e, rows); err == nil {
		t.Error("xml: no error")
	}
}
