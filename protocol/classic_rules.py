"""(being written)"""
from __future__ import annotations


class ClassicGroupRules:
    def __init__(self, ctx) -> None:
        self.ctx = ctx

    def on_metadata(self, groups) -> None:
        pass

    def replay(self, record) -> None:
        pass

    def on_timer(self, key) -> None:
        pass
