// Sources/Operations/Operations.docc/SeeingWhatYourQueuesDo.md

import Operations

func seeingWhatYourQueuesDoEvents(queue: OperationQueue) async {
for await element in queue.events() {
    if element.droppedBefore > 0 { print("(\(element.droppedBefore) events dropped)") }
    print(element.event.sequence, element.event.kind, element.event.operation.name ?? "?")
}
}

func seeingWhatYourQueuesDoProgress() {
let queue = OperationQueue()
queue.progress.totalUnitCount = 3                 // counting starts here
let observation = queue.progress.observe(\.fractionCompleted) { progress, _ in
    print(progress.fractionCompleted)             // 0.33…, 0.66…, 1.0
}
queue.addOperations((1...3).map { _ in BlockOperation {} }, waitUntilFinished: true)
observation.invalidate()
}
