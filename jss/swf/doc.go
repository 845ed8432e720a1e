// Package swf reads and writes the Standard Workload Format (SWF) of the
// Parallel Workloads Archive (https://www.cs.huji.ac.il/labs/parallel/workload/).
//
// It is a pure format package: a Record holds the 18 numbers of a job line
// exactly as written, and nothing here decides what they mean for a
// scheduler (which field is the job size, how to treat -1, ...). A later
// layer converts records into jobs.
//
// # Format
//
// An SWF file is text, one job per line, each line holding 18
// whitespace-separated numbers; -1 (Unknown) marks a missing value and any
// field may be fractional. The fields are, in order: job number, submit
// time, wait time, run time, allocated processors, average CPU time, used
// memory, requested processors, requested time, requested memory, status,
// user, group, executable, queue, partition, preceding job and think time
// (see FieldName).
//
// Lines starting with ';' are comments. At the top of the file they form
// the header, made of "; Key: Value" fields such as "; MaxProcs: 100". A
// comment line indented under the value, or any line with no "Key:",
// continues the previous field (";              http://..."); a lone ";"
// is blank and ends it. Keys may repeat (Note, Partition, Queue). Header
// keeps every field in order, free text included, and also exposes the
// well-known keys as typed values.
//
// Blank lines are ignored, CRLF line endings and a missing final newline are
// accepted.
//
// # Streaming
//
// A Reader reads its input line by line through a fixed buffer and never
// loads the file: NewReader consumes only the header block (and the first job
// line), and each Next parses one line in place, without allocating. Comment
// lines met between jobs are appended to the header as they are reached.
// Open adds file handling and transparent gzip decompression.
//
// A Writer produces lines aligned like the archive's own files; what it
// writes reads back to identical records and header fields.
//
// # Errors
//
// Problems with the input are reported as *ParseError, naming the file, line,
// and field or header key, e.g.
//
//	KTH.swf:123: field 5 (allocated processors): "abc": not a number
//
// Their cause is one of the Err* sentinels, for errors.Is. By default
// (strict) the Reader returns the error from Next and then carries on with
// the next line if called again; a malformed typed header value makes
// NewReader fail. WithLenient instead skips malformed lines and ignores
// malformed typed header values, counting them (Reader.Skipped) and keeping
// the first few (Reader.SkippedErrors). Read errors are never swallowed:
// they are returned wrapped as "swf: read NAME: ..." in either mode and
// repeat on every later call.
package swf
