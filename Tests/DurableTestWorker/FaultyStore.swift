// A store that kills its own process at a chosen point of an operation's life, for the tests
// that check what a crash at that point leaves behind.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
@_spi(Engine) import Operations

#if canImport(Glibc)
import Glibc
#endif

/// Where the process dies.
enum Fault: String {
    /// Right after a claim of the kind was recorded, before its body starts.
    case afterClaim = "after-claim"
    /// After a body of the kind ended, before its end is recorded.
    case beforeCompletion = "before-completion"
}

/// `base`, with a SIGKILL of this process at `fault` for the first operation of `kind`.
func dying(_ base: any DurableOperationStore, at fault: Fault, kind: String) -> InterceptingStore {
    /// Operations of `kind` this process claimed.
    let claimed = Locked<Set<DurableOperationID>>([])
    var hooks = InterceptingStore.Hooks()
    hooks.afterClaim = { claims in
        let mine = claims.filter { $0.kind == kind }.map(\.id)
        if fault == .afterClaim, let id = mine.first { die("after claiming \(id)") }
        claimed.withLock { $0.formUnion(mine) }
    }
    hooks.beforeComplete = { completions in
        guard fault == .beforeCompletion else { return }
        if let id = completions.map(\.id).first(where: { id in claimed.withLock { $0.contains(id) } }) {
            die("before recording the end of \(id)")
        }
    }
    return InterceptingStore(base, hooks: hooks)
}

private func die(_ why: String) -> Never {
    FileHandle.standardOutput.write(Data("dying \(why)\n".utf8))
    kill(getpid(), SIGKILL)
    fatalError("SIGKILL did not end the process")
}
#endif
