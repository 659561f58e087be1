// Sources/Operations/Operations.docc/OutcomesAndEvents.md

import Operations

func outcomesAndEvents(queue: OperationQueue) {
struct SignedOut: Error {}

let upload = BlockOperation { /* … */ }
queue.addOperation(upload)
upload.cancel(with: SignedOut())
upload.waitUntilFinished()

switch upload.outcome {
case .succeeded?: print("uploaded")
case .cancelled(let reason)?: print("cancelled:", reason.map { "\($0)" } ?? "no reason")
case .failed(let error)?: print("failed:", error)
case nil: print("not finished")
}
}
