import Operations
import OperationsRecording

/// 9. Queue control: suspension, barriers, priorities and `OperationQueue.main`.
public struct QueueControlChapter: Chapter {
    public static let name = "queue-control"
    public static let title = "queue control: suspension, barriers, priorities, the main queue"
    public init() {}

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let recorder = OperationRecorder(title: "Queue control")
        var notes: [String] = []

        // Suspension: nothing starts while suspended; running work continues.
        let queue = OperationQueue()
        queue.name = "suspended"
        recorder.record(queue)
        queue.isSuspended = true
        let started = Protected<[String]>()
        for index in 1...3 {
            let operation = BlockOperation { started.append("\(index)"); context.work(0.5) }
            operation.name = "suspended \(index)"
            queue.addOperation(operation)
        }
        context.work(0.5)
        let whileSuspended = started.current.count
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        result.numbers["started while suspended"] = Double(whileSuspended)
        notes.append("suspended queue: \(whileSuspended) of 3 started while suspended, \(started.current.count) after resuming")

        // A barrier: after everything before it, before everything after it.
        let barrierQueue = OperationQueue()
        barrierQueue.name = "barrier"
        recorder.record(barrierQueue)
        let order = Protected<[String]>()
        for index in 1...4 {
            let operation = BlockOperation { context.work(Double(index) * 0.2); order.append("before\(index)") }
            operation.name = "before \(index)"
            barrierQueue.addOperation(operation)
        }
        barrierQueue.addBarrierBlock { order.append("BARRIER") }
        // `addBarrierBlock` makes an unnamed operation; named, the timeline calls it what
        // it is. It is the queue's last operation (the four before it end before it does).
        barrierQueue.operations.last?.name = "barrier"
        for index in 1...4 {
            let operation = BlockOperation { order.append("after\(index)"); context.work(0.2) }
            operation.name = "after \(index)"
            barrierQueue.addOperation(operation)
        }
        barrierQueue.waitUntilAllOperationsAreFinished()
        result.lists["barrier order"] = order.current
        notes.append("barrier: " + order.current.joined(separator: " "))

        // Priorities on a suspended serial queue.
        let serial = OperationQueue()
        serial.name = "priorities"
        serial.maxConcurrentOperationCount = 1
        serial.isSuspended = true
        recorder.record(serial)
        let priorityOrder = Protected<[String]>()
        let priorities: [(String, Operation.QueuePriority)] = [("low", .low), ("normal", .normal), ("veryHigh", .veryHigh), ("high", .high), ("veryLow", .veryLow)]
        for (label, priority) in priorities {
            let operation = BlockOperation { priorityOrder.append(label); context.work(0.2) }
            operation.name = "priority \(label)"
            operation.queuePriority = priority
            serial.addOperation(operation)
        }
        serial.isSuspended = false
        serial.waitUntilAllOperationsAreFinished()
        result.lists["priority order"] = priorityOrder.current
        notes.append("added low, normal, veryHigh, high, veryLow to a suspended serial queue; ran " + priorityOrder.current.joined(separator: ", "))

        // The main queue: serial, on the main thread's dispatch queue.
        let mainKey = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: mainKey, value: true)
        let onMain = Protected<[String]>()
        let mainDone = DispatchSemaphore(value: 0)
        recorder.record(OperationQueue.main)
        let mainOperation = BlockOperation {
            onMain.append("\(DispatchQueue.getSpecific(key: mainKey) == true)")
            onMain.append("\(OperationQueue.current === OperationQueue.main)")
        }
        mainOperation.name = "on the main queue"
        mainOperation.completionBlock = { mainDone.signal() }
        OperationQueue.main.addOperation(mainOperation)
        mainDone.wait()
        result.lists["main"] = onMain.current
        notes.append("OperationQueue.main ran an operation on the main dispatch queue: \(onMain.current.first ?? "?"), and OperationQueue.current was .main: \(onMain.current.last ?? "?")")
        for note in notes { context.console.say("   " + note) }
        try context.writeRecording(recorder, chapter: "9-queue-control", notes: notes, into: &result)
        return result
    }
}
