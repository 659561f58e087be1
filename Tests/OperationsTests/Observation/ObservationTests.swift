import Operations
import OperationsComposition
import Testing

@Suite("Key-value observing of operations and queues")
struct ObservationTests {
    @Test("observers of isExecuting and isFinished see the run, with new values")
    func stateKeys() {
        let observer = StateObserver()
        let operation = BlockOperation {}
        for key in ["isExecuting", "isFinished", "isCancelled", "isReady"] {
            operation.addObserver(observer, forKeyPath: key, options: [.new], context: nil)
        }
        operation.start()
        #expect(observer.values(for: "isExecuting") == ["true", "false"])
        #expect(observer.values(for: "isFinished") == ["true"])
        for key in ["isExecuting", "isFinished", "isCancelled", "isReady"] {
            operation.removeObserver(observer, forKeyPath: key)
        }
    }

    @Test("options .initial, .old and .prior")
    func options() {
        let observer = StateObserver()
        let operation = Operation()
        operation.addObserver(observer, forKeyPath: "isCancelled", options: [.initial, .new, .old, .prior], context: nil)
        operation.cancel()
        #expect(observer.events() == [
            .init(keyPath: "isCancelled", new: "false", old: nil, prior: false),
            .init(keyPath: "isCancelled", new: nil, old: "false", prior: true),
            .init(keyPath: "isCancelled", new: "true", old: "false", prior: false),
        ])
        operation.removeObserver(observer, forKeyPath: "isCancelled", context: nil)
        operation.start()
        #expect(observer.events().count == 3, "a removed observer hears nothing")
    }

    @Test("isReady is announced when the last dependency finishes")
    func readyAnnounced() {
        let observer = StateObserver()
        let dependency = Operation(), operation = Operation()
        operation.addDependency(dependency)
        operation.addObserver(observer, forKeyPath: "isReady", options: [.new], context: nil)
        dependency.start()
        #expect(observer.values(for: "isReady").last == "true")
        operation.removeObserver(observer, forKeyPath: "isReady")
    }

    @Test("a subclass's own announcements reach observers, in either spelling")
    func subclassAnnouncements() {
        let observer = StateObserver()
        let operation = DeferredOperation { op in op.finish() }
        operation.addObserver(observer, forKeyPath: "isFinished", options: [.new], context: nil)
        operation.addObserver(observer, forKeyPath: "finished", options: [.new], context: nil)
        let queue = OperationQueue()
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(observer.values(for: "isFinished") == ["true"])
        #expect(observer.values(for: "finished") == ["true"])
        operation.removeObserver(observer, forKeyPath: "isFinished")
        operation.removeObserver(observer, forKeyPath: "finished")
    }

    @Test("the context pointer comes back")
    func context() {
        final class ContextObserver: NSObject, @unchecked Sendable {
            let contexts = Shared<[Int]>([])
            override func observeValue(
                forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
                context: UnsafeMutableRawPointer?
            ) {
                contexts.update { $0.append(Int(bitPattern: context)) }
            }
        }
        let observer = ContextObserver()
        let operation = Operation()
        let context = UnsafeMutableRawPointer(bitPattern: 0x1234)
        operation.addObserver(observer, forKeyPath: "isFinished", options: [], context: context)
        operation.start()
        #expect(observer.contexts() == [0x1234])
        operation.removeObserver(observer, forKeyPath: "isFinished", context: context)
    }

    @Test("observe(\\.isFinished) with a change handler, and the token stops it")
    func blockObservation() {
        let operation = BlockOperation {}
        let changes = Shared<[Bool?]>([])
        let token = operation.observe(\.isFinished, options: [.new]) { _, change in
            changes.update { $0.append(change.newValue) }
        }
        operation.start()
        #expect(changes() == [true])
        token.invalidate()
        let second = Operation()
        let initial = Shared<[Bool?]>([])
        let secondToken = second.observe(\.isExecuting, options: [.initial, .new]) { _, change in
            initial.update { $0.append(change.newValue) }
        }
        #expect(initial() == [false])
        _ = secondToken
    }

    @Test("observe works for a final subclass that overrides the property")
    func blockObservationOfOverride() {
        let operation = DocumentedAsyncOperation { finish in finish() }
        let changes = Shared<[String]>([])
        let token = operation.observe(\.isFinished, options: [.old, .new]) { _, change in
            changes.update { $0.append("\(change.oldValue.map { "\($0)" } ?? "nil")→\(change.newValue.map { "\($0)" } ?? "nil")") }
        }
        operation.start()
        #expect(changes() == ["false→true"])
        token.invalidate()
    }

    @Test("queue keys: operationCount, isSuspended, maxConcurrentOperationCount, name, qualityOfService")
    func queueKeys() {
        let observer = StateObserver()
        let queue = OperationQueue()
        let keys = ["operationCount", "isSuspended", "maxConcurrentOperationCount", "name", "qualityOfService", "operations"]
        for key in keys { queue.addObserver(observer, forKeyPath: key, options: [.new], context: nil) }
        queue.isSuspended = true
        queue.maxConcurrentOperationCount = 2
        queue.name = "observed"
        queue.qualityOfService = .utility
        queue.addOperation {}
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(eventually { observer.values(for: "operationCount").count == 2 })
        #expect(observer.values(for: "isSuspended") == ["true", "false"])
        #expect(observer.values(for: "maxConcurrentOperationCount") == ["2"])
        #expect(observer.values(for: "name") == ["observed"])
        #expect(observer.values(for: "operationCount") == ["1", "0"])
        #expect(observer.values(for: "operations").count == 2)
        #expect(observer.values(for: "qualityOfService").count == 1)
        for key in keys { queue.removeObserver(observer, forKeyPath: key) }
    }

    @Test("queue observation with a key path")
    func queueKeyPath() {
        let queue = OperationQueue()
        let counts = Shared<[Int?]>([])
        let emptied = BlockingSignal()
        let token = queue.observe(\.operationCount, options: [.new]) { _, change in
            counts.update { $0.append(change.newValue) }
            if change.newValue == 0 { emptied.open() }
        }
        queue.addOperation {}
        // The notification follows the change; waiting for the queue does not order it.
        #expect(emptied.wait())
        #expect(counts() == [1, 0])
        token.invalidate()
    }

    @Test("an observer is an NSObject of Foundation too")
    func foundationObject() {
        let observer: Foundation.NSObject = StateObserver()
        #expect(observer.isEqual(observer))
        #expect(observer.hash == observer.hash)
    }
}
