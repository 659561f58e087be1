// Sources/Operations/Operations.docc/SeeingWhatYourQueuesDo.md, the recorder.

import OperationsRecording
import Operations

func seeingWhatYourQueuesDoRecording(queue: OperationQueue) throws {
let recorder = OperationRecorder(title: "Image pipeline")
recorder.record(queue)
// … add operations, wait …
let recording = recorder.stop()
try recording.html().write(toFile: "pipeline.html", atomically: true, encoding: .utf8)
try recording.chromeTraceJSON().write(toFile: "pipeline.trace.json", atomically: true, encoding: .utf8)
try recording.graph.dot().write(toFile: "pipeline.dot", atomically: true, encoding: .utf8)
}
