import Operations
import OperationsComposition
import OperationsRecording

/// A pretend account: signing in takes a moment and works only with the right password.
final class Account: Sendable {
    let password: String
    private let state = Protected<(signedIn: Bool, signIns: Int)>((false, 0))

    init(password: String) { self.password = password }

    var isSignedIn: Bool { state.current.signedIn }
    /// How many times someone actually signed in.
    var signIns: Int { state.current.signIns }

    /// Signs in, unless signed in already; throws ``WrongPassword`` when the password is wrong.
    func signIn(context: TourContext) throws {
        guard !isSignedIn else { return }
        context.work(0.5)
        guard password == "correct horse" else { throw WrongPassword() }
        state.withLock { $0 = (true, $0.signIns + 1) }
    }
}

/// Why a sign-in failed: the account's password is wrong.
struct WrongPassword: Error, CustomStringConvertible {
    var description: String { "wrong password" }
}

/// Not signed in: the reason an operation that needs an account is cancelled.
struct NotSignedIn: Error, CustomStringConvertible {
    var description: String { "not signed in" }
}

/// "Only when signed in": contributes a "sign in" operation that runs first (one at a time,
/// category "sign in", so that two operations needing an account sign in once) and fails
/// with a wrong password, then holds when the account is signed in.
struct SignedInCondition: OperationCondition {
    let account: Account
    let context: TourContext
    var name: String { "signed in" }

    func dependency(for operation: Operation) -> Operation? {
        guard !account.isSignedIn else { return nil }
        let signIn = ValueBlockOperation<Void> { [account, context] in try account.signIn(context: context) }
        signIn.name = "sign in for \(operation.name ?? "an operation")"
        signIn.addExclusivity("sign in")
        return signIn
    }

    func evaluate(for operation: Operation) async throws {
        guard account.isSignedIn else { throw NotSignedIn() }
    }
}

/// Readers and writers of the "database" at the moment, and the most seen.
final class DatabaseMeter: Sendable {
    private struct State {
        var readers = 0, writers = 0, mostReaders = 0, mostWriters = 0, violations = 0
    }
    private let state = Protected(State())

    func enter(writer: Bool) {
        state.withLock { state in
            if writer {
                if state.readers > 0 || state.writers > 0 { state.violations += 1 }
                state.writers += 1
            } else {
                if state.writers > 0 { state.violations += 1 }
                state.readers += 1
            }
            state.mostReaders = max(state.mostReaders, state.readers)
            state.mostWriters = max(state.mostWriters, state.writers)
        }
    }

    func leave(writer: Bool) {
        state.withLock { state in
            if writer { state.writers -= 1 } else { state.readers -= 1 }
        }
    }

    var mostReaders: Int { state.current.mostReaders }
    var mostWriters: Int { state.current.mostWriters }
    var violations: Int { state.current.violations }
}

extension CompositionChapter {
    /// Two operations that need an account share one sign-in; with the wrong password the
    /// operation is cancelled with the condition's error and never runs.
    func signIn(in context: TourContext, queue: OperationQueue, result: inout ChapterResult) -> [String] {
        let account = Account(password: "correct horse")
        let ran = Protected<[String]>()
        func needingAccount(_ name: String, account: Account) -> BlockOperation {
            let operation = BlockOperation { ran.append(name) }
            operation.name = name
            operation.addCondition(SignedInCondition(account: account, context: context))
            return operation
        }
        let profile = needingAccount("load profile", account: account)
        let messages = needingAccount("load messages", account: account)
        queue.addOperations([profile, messages], waitUntilFinished: true)
        let wrong = Account(password: "tr0ub4dor")
        let post = needingAccount("post with the wrong password", account: wrong)
        queue.addOperations([post], waitUntilFinished: true)
        let refused = post.outcome?.error is NotSignedIn
        result.numbers["sign-ins"] = Double(account.signIns)
        result.lists["ran with an account"] = ran.current.sorted()
        result.numbers["refused without an account"] = refused && !ran.current.contains(post.name!) ? 1 : 0
        return [
            "a \"signed in\" condition that contributes a \"sign in\" operation: two operations needing an account ran (\(ran.current.sorted().joined(separator: ", "))) after \(account.signIns) sign-in",
            "with the wrong password the sign-in fails, and \"\(post.name!)\" is cancelled with the condition's error (\(post.outcome?.error.map { "\($0)" } ?? "none")) without running",
        ]
    }

    /// A "database" category: writers alone, readers together, across three queues; the
    /// first two readers meet inside the database (they must run at the same time).
    func database(in context: TourContext, recorder: OperationRecorder, result: inout ChapterResult) -> String {
        let queues = ["database readers A", "database readers B", "database writers"].map { name in
            let queue = OperationQueue()
            queue.name = name
            recorder.record(queue)
            return queue
        }
        let meter = DatabaseMeter()
        let meeting = DispatchGroup()
        meeting.enter()
        meeting.enter()
        let met = Protected(true)
        func reader(_ index: Int) -> BlockOperation {
            let operation = BlockOperation {
                meter.enter(writer: false)
                if index < 2 {
                    meeting.leave()
                    // Bounded only so that a broken library cannot hang the tour.
                    if meeting.wait(timeout: .now() + 30) == .timedOut { met.withLock { $0 = false } }
                }
                context.work(0.25)
                meter.leave(writer: false)
            }
            operation.name = "read \(index)"
            operation.addExclusivity("database", mode: .shared)
            return operation
        }
        func writer(_ index: Int) -> BlockOperation {
            let operation = BlockOperation {
                meter.enter(writer: true)
                context.work(0.25)
                meter.leave(writer: true)
            }
            operation.name = "write \(index)"
            operation.addExclusivity("database")
            return operation
        }
        // The first two readers go in alone and meet inside (they hold the category
        // together); the writers and the other readers follow once they have. An operation
        // with nothing to wait for asks for its categories as it is added, not when a worker
        // of its queue starts it, so across the three queues they ask in the order added.
        let first: [(Operation, OperationQueue)] = [(reader(0), queues[0]), (reader(1), queues[1])]
        var rest: [(Operation, OperationQueue)] = []
        for index in 0..<3 {
            if index > 0 {
                rest.append((reader(2 * index), queues[0]))
                rest.append((reader(2 * index + 1), queues[1]))
            }
            rest.append((writer(index), queues[2]))
        }
        for (operation, queue) in first { queue.addOperation(operation) }
        if meeting.wait(timeout: .now() + 30) == .timedOut { met.withLock { $0 = false } }
        for (operation, queue) in rest { queue.addOperation(operation) }
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        result.numbers["most readers at once"] = Double(meter.mostReaders)
        result.numbers["most writers at once"] = Double(meter.mostWriters)
        result.numbers["exclusivity violations"] = Double(meter.violations)
        result.numbers["first readers met"] = met.current ? 1 : 0
        return "a \"database\" category across three queues: 6 readers (shared) and 3 writers (exclusive); at most \(meter.mostReaders) readers and \(meter.mostWriters) writer at once, \(meter.violations) violations"
    }
}
