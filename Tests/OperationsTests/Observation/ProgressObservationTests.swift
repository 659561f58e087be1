import Operations
import OperationsComposition
import Testing

@Suite("Progress is observable on Linux")
struct ProgressObservationTests {
    @Test("initializers called on our class return our class")
    func ourClass() {
        let plain = Progress(totalUnitCount: 4)
        let child = Progress(totalUnitCount: 2, parent: plain, pendingUnitCount: 2)
        let discrete = Progress.discreteProgress(totalUnitCount: 3)
        #expect(String(reflecting: type(of: plain)) == "Operations.Progress")
        #expect(String(reflecting: type(of: child)) == "Operations.Progress")
        #expect(String(reflecting: type(of: discrete)) == "Operations.Progress")
        let asFoundation: Foundation.Progress = plain
        #expect(asFoundation.totalUnitCount == 4)
    }

    @Test("observe(\\.fractionCompleted) with .old and .new")
    func fractionCompleted() {
        let progress = Progress(totalUnitCount: 4)
        let changes = Shared<[String]>([])
        let token = progress.observe(\.fractionCompleted, options: [.old, .new]) { _, change in
            changes.append("\(change.oldValue ?? -1)→\(change.newValue ?? -1)")
        }
        progress.completedUnitCount = 1
        progress.completedUnitCount = 2
        #expect(changes() == ["0.0→0.25", "0.25→0.5"])
        token.invalidate()
        progress.completedUnitCount = 3
        #expect(changes().count == 2, "an invalidated observation hears nothing")
    }

    @Test("completedUnitCount, totalUnitCount and isCancelled, with .initial and .prior")
    func otherKeys() {
        let progress = Progress(totalUnitCount: 10)
        let events = Shared<[String]>([])
        let completed = progress.observe(\.completedUnitCount, options: [.initial, .new, .old, .prior]) { _, change in
            events.append("completed \(change.isPrior ? "prior " : "")\(change.oldValue.map { "\($0)" } ?? "nil")→\(change.newValue.map { "\($0)" } ?? "nil")")
        }
        let total = progress.observe(\.totalUnitCount, options: [.new]) { _, change in
            events.append("total \(change.newValue ?? -1)")
        }
        let cancelled = progress.observe(\.isCancelled, options: [.new]) { _, change in
            events.append("cancelled \(change.newValue ?? false)")
        }
        progress.completedUnitCount = 3
        progress.totalUnitCount = 20
        progress.cancel()
        #expect(events() == [
            "completed nil→0", "completed prior 0→nil", "completed 0→3", "total 20", "cancelled true",
        ])
        _ = (completed, total, cancelled)
    }

    @Test("addObserver(_:forKeyPath:) and removeObserver as on Darwin")
    func observerObject() {
        let progress = Progress(totalUnitCount: 2)
        let observer = StateObserver()
        progress.addObserver(observer, forKeyPath: "fractionCompleted", options: [.new], context: nil)
        progress.completedUnitCount = 1
        progress.removeObserver(observer, forKeyPath: "fractionCompleted")
        progress.completedUnitCount = 2
        #expect(observer.values(for: "fractionCompleted") == ["0.5"])
    }

    @Test("a child's progress reaches observers of its parent, for each way of attaching it")
    func children() {
        for attach in ["init(parent:)", "addChild", "becomeCurrent"] {
            let parent = Progress(totalUnitCount: 2)
            let child: Progress
            switch attach {
            case "init(parent:)":
                child = Progress(totalUnitCount: 4, parent: parent, pendingUnitCount: 1)
            case "addChild":
                child = Progress(totalUnitCount: 4)
                parent.addChild(child, withPendingUnitCount: 1)
            default:
                parent.becomeCurrent(withPendingUnitCount: 1)
                child = Progress(totalUnitCount: 4)
                parent.resignCurrent()
            }
            let fractions = Shared<[Double]>([])
            let completed = Shared<[Int64]>([])
            let token = parent.observe(\.fractionCompleted, options: [.new]) { _, change in
                fractions.update { $0.append(change.newValue ?? -1) }
            }
            let countToken = parent.observe(\.completedUnitCount, options: [.new]) { _, change in
                completed.update { $0.append(change.newValue ?? -1) }
            }
            child.completedUnitCount = 2
            child.completedUnitCount = 4
            #expect(fractions() == [0.25, 0.5], "\(attach)")
            #expect(completed().last == 1, "the finished child's share is counted (\(attach))")
            _ = (token, countToken)
        }
    }

    @Test("cancelling a parent notifies observers of its children")
    func cancelChildren() {
        let parent = Progress(totalUnitCount: 2)
        let child = Progress(totalUnitCount: 1, parent: parent, pendingUnitCount: 1)
        let heard = Shared<[Bool]>([])
        let token = child.observe(\.isCancelled, options: [.new]) { _, change in
            heard.update { $0.append(change.newValue ?? false) }
        }
        parent.cancel()
        #expect(heard() == [true])
        #expect(child.isCancelled)
        _ = token
    }

    @Test("observers run with no lock held: they may read and change the progress")
    func observersOutsideLock() {
        let progress = Progress(totalUnitCount: 10)
        let read = Shared<[Int64]>([])
        let token = progress.observe(\.fractionCompleted) { progress, _ in
            read.update { $0.append(progress.completedUnitCount) }
            if progress.completedUnitCount == 1 { progress.completedUnitCount = 2 }
        }
        progress.completedUnitCount = 1
        #expect(read() == [1, 2], "the outer call, then the one its own change caused")
        _ = token
    }

    /// The first finishing operation's notification waits until the second operation has
    /// been counted too: that deadlocks while an observer runs under the queue's lock.
    @Test("observers of OperationQueue.progress run with no lock of the queue held")
    func queueProgressOutsideLock() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let progress = queue.progress
        progress.totalUnitCount = 2
        let firstCounted = BlockingSignal(), secondCounted = BlockingSignal(), done = BlockingSignal()
        let token = progress.observe(\.completedUnitCount, options: [.new]) { _, change in
            switch change.newValue {
            case 1:
                firstCounted.open()
                #expect(secondCounted.wait(), "the second operation could not be counted")
                done.open()
            case 2: secondCounted.open()
            default: break
            }
        }
        queue.addOperation {}
        queue.addOperation { #expect(firstCounted.wait()) }
        #expect(done.wait())
        #expect(progress.completedUnitCount == 2)
        token.invalidate()
    }
}
