"""The Kafka wire codec, pure and I/O-free: one schema per API, every version."""

# The repository's top-level `protocol` is a link to this folder, kept so the top level shows the layout the
# project was specified with. It is for reading only: importing through it would load every module a second
# time under another name (`ErrorCode.X is ErrorCode.X` failing between the two), so it refuses.
if __name__ != "kcoord.protocol":
    raise ImportError(f"{__name__!r} is the repository's link to kcoord/protocol: import kcoord.protocol")
