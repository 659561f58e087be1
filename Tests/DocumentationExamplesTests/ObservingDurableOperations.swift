// Sources/OperationsDurable/OperationsDurable.docc/ObservingDurableOperations.md (with the
// Durable trait).
#if Durable

import OperationsTracing
import OperationsMetrics
import OperationsLogging
import Logging

import Operations
import OperationsDurable

func observingDurableOperationsEvents(store: any DurableOperationStore) -> (DurableQueue, DurableWorker, DurableEventSubscription) {
let queue = DurableQueue(name: "images", store: store)
let worker = DurableWorker(store: store, queues: ["images"], kinds: [Download(), Filter(), Output()])

let subscription = worker.addEventHandler { event in   // keep it: the handler stops when released
    print(event.kind, event.operationKind, event.operation, event.attempt ?? 0)
}
Task {
    for await element in queue.events() { print(element.event.kind, element.event.operation) }
}
return (queue, worker, subscription)
}

func observingDurableOperationsAdapters(worker: DurableWorker, queue: DurableQueue) {
let tracing = DurableTracing(worker)                       // a span per attempt
let metrics = DurableMetrics(worker, queue)                // counters and timers by queue and kind
let logging = DurableLogging(worker, queue, logger: Logger(label: "images"))
_ = (tracing, metrics, logging)
}

#endif
