package experiment

import "time"

// MPICalibration is what a program's calibration run showed: the program
// alone on a space-shared cluster, its runtime on the controller's clock
// and its traffic as the relays counted it (summed over its ranks).
type MPICalibration struct {
	Program     string        `json:"program"`
	Ranks       int           `json:"ranks"`
	JobID       int64         `json:"job_id"`
	Runtime     time.Duration `json:"runtime_ns"` // start to end
	Sent        uint64        `json:"sent"`       // messages, collectives' included
	SentBytes   uint64        `json:"sent_bytes"`
	Collectives uint64        `json:"collectives"` // collective calls (each rank's counts)
	Probes      uint64        `json:"probes"`
}

// MPIModel is the simulator's model of an MPI program: one of bench's
// ⟨g, v, comm, sync⟩ templates and its iterations, whose dedicated run on
// the simulated network lasts the calibrated runtime.
type MPIModel struct {
	Template   string        `json:"template"`
	Iterations int           `json:"iterations"`
	Runtime    time.Duration `json:"runtime_ns"` // the template's estimate × iterations
	// Why says how the template was chosen, for the report.
	Why string `json:"why"`
}

// MPIProgramModel is one program's calibration and the model the
// simulator runs for it, as results.json and report.md record them.
type MPIProgramModel struct {
	Name        string         `json:"name"`
	Command     []string       `json:"command"`
	Ranks       int            `json:"ranks"`
	Weight      int            `json:"weight"`
	Calibration MPICalibration `json:"calibration"`
	Model       MPIModel       `json:"model"`
}
