package swf

// Unknown is the value SWF uses for a field whose value was not recorded.
const Unknown = -1.0

// NumFields is the number of fields on an SWF job line.
const NumFields = 18

// Record is one job line. All 18 fields are kept as float64 exactly as read
// (-1 = unknown), so a record round-trips through Writer and Reader. The
// package attaches no meaning to the values: deciding, say, whether the job
// size is field 5 or field 8 is the business of the layer above.
type Record struct {
	Line int // 1-based line number in the source; 0 if not read from a file

	JobNumber           float64 // 1
	SubmitTime          float64 // 2, seconds since the log start
	WaitTime            float64 // 3, seconds
	RunTime             float64 // 4, seconds
	AllocatedProcessors float64 // 5
	AverageCPUTime      float64 // 6, seconds
	UsedMemory          float64 // 7, KB per processor
	RequestedProcessors float64 // 8
	RequestedTime       float64 // 9, seconds
	RequestedMemory     float64 // 10, KB per processor
	Status              float64 // 11: 1 completed, 0 failed, 5 cancelled
	UserID              float64 // 12
	GroupID             float64 // 13
	Executable          float64 // 14
	Queue               float64 // 15
	Partition           float64 // 16
	PrecedingJob        float64 // 17
	ThinkTime           float64 // 18, seconds
}

// Fields returns the 18 fields in SWF order (index 0 is field 1).
func (r *Record) Fields() [NumFields]float64 {
	return [NumFields]float64{
		r.JobNumber, r.SubmitTime, r.WaitTime, r.RunTime, r.AllocatedProcessors,
		r.AverageCPUTime, r.UsedMemory, r.RequestedProcessors, r.RequestedTime,
		r.RequestedMemory, r.Status, r.UserID, r.GroupID, r.Executable,
		r.Queue, r.Partition, r.PrecedingJob, r.ThinkTime,
	}
}

// SetFields sets the 18 fields from f, in SWF order. Line is left alone.
func (r *Record) SetFields(f [NumFields]float64) {
	r.JobNumber, r.SubmitTime, r.WaitTime, r.RunTime, r.AllocatedProcessors = f[0], f[1], f[2], f[3], f[4]
	r.AverageCPUTime, r.UsedMemory, r.RequestedProcessors, r.RequestedTime = f[5], f[6], f[7], f[8]
	r.RequestedMemory, r.Status, r.UserID, r.GroupID, r.Executable = f[9], f[10], f[11], f[12], f[13]
	r.Queue, r.Partition, r.PrecedingJob, r.ThinkTime = f[14], f[15], f[16], f[17]
}

// FieldName returns the SWF name of field i (1-based), as used in error
// messages: FieldName(5) == "allocated processors". It returns "" when i is
// out of range.
func FieldName(i int) string {
	// A switch rather than a table keeps the package free of mutable globals.
	switch i {
	case 1:
		return "job number"
	case 2:
		return "submit time"
	case 3:
		return "wait time"
	case 4:
		return "run time"
	case 5:
		return "allocated processors"
	case 6:
		return "average CPU time"
	case 7:
		return "used memory"
	case 8:
		return "requested processors"
	case 9:
		return "requested time"
	case 10:
		return "requested memory"
	case 11:
		return "status"
	case 12:
		return "user"
	case 13:
		return "group"
	case 14:
		return "executable"
	case 15:
		return "queue"
	case 16:
		return "partition"
	case 17:
		return "preceding job"
	case 18:
		return "think time"
	}
	return ""
}
