"""Choosing the model server in the setup panel: Ollama or an OpenAI-compatible one (LM Studio,
llama.cpp's server, Jan, vLLM) at an address; and, on a server Kelvin cannot pull from, one of the
models it has for the chat. Only the choosing: the panel saves it (on a worker) and says how it went.
"""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QPushButton, QWidget

KINDS = (("ollama", "Ollama"), ("openai", "OpenAI-compatible: LM Studio, llama.cpp, Jan, vLLM"))
DEFAULT_URL = {"ollama": "http://127.0.0.1:11434", "openai": "http://127.0.0.1:1234/v1"}
PLACEHOLDER = {"ollama": "Ollama's address, e.g. http://127.0.0.1:11434",
               "openai": "LM Studio: http://127.0.0.1:1234/v1 · llama-server: http://127.0.0.1:8080/v1"}


class ServerChooser(QWidget):
    """Which kind of server, at which address, and a button to use it."""

    chosen = Signal(str, str)  # kind, address

    def __init__(self, kind: str, urls: dict[str, str], parent: QWidget | None = None):
        super().__init__(parent, objectName="serverChooser")
        self._urls = {**DEFAULT_URL, **{k: v for k, v in urls.items() if v}}
        self.kind = QComboBox(objectName="serverKind")
        for key, text in KINDS:
            self.kind.addItem(text, key)
        self.kind.setToolTip("The program that runs Kelvin's model on this computer (or on a studio server)")
        # the kinds' names are long ("OpenAI-compatible (LM Studio, llama.cpp, …)"): in a 400 px window the
        # closed box shows their start and the open list shows them whole, instead of pushing the row wider
        self.kind.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.kind.setMinimumContentsLength(12)
        self.address = QLineEdit(objectName="serverAddress")
        self.use = QPushButton("Use", objectName="serverUse", clicked=self._use)
        self.use.setToolTip("Keep this choice (also for the next start) and talk to it from now on")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 4, 0, 0)
        row.addWidget(self.kind)
        row.addWidget(self.address, 1)
        row.addWidget(self.use)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.show_choice(kind)

    def show_choice(self, kind: str, url: str = "") -> None:
        if url:
            self._urls[kind] = url
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(max(0, self.kind.findData(kind)))
        self.kind.blockSignals(False)
        self._kind_changed()

    def _kind_changed(self) -> None:
        kind = self.kind.currentData()
        self.address.setText(self._urls.get(kind, ""))
        self.address.setPlaceholderText(PLACEHOLDER[kind])

    def _use(self) -> None:
        kind = self.kind.currentData()
        url = self.address.text().strip() or DEFAULT_URL[kind]
        self._urls[kind] = url
        self.chosen.emit(kind, url)


class ModelPicker(QWidget):
    """The models a server has, to pick the chat model from (where Kelvin cannot pull one)."""

    chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="modelPicker")
        self.models = QComboBox(objectName="serverModels")
        self.use = QPushButton("Use for chat", objectName="modelUse",
                               clicked=lambda: self.chosen.emit(self.models.currentText()))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 4, 0, 0)
        row.addWidget(self.models, 1)
        row.addWidget(self.use)
        self.hide()

    def offer(self, names: list[str]) -> None:
        self.models.clear()
        self.models.addItems(names)
        self.setVisible(bool(names))
