"""M5Stack CoreS3 on UIFlow2 MicroPython: the StackChan's own senses.

UIFlow2 builds differ, so every driver is probed at run time and a missing or
failing one becomes a sentence (`camera_problem()` etc.) instead of a crash:
  screen   M5.Lcd / Display.newCanvas(w, h, bpp, psram) + canvas.push(x, y)
  camera   camera.init(pixformat=camera.RGB565, framesize=camera.QVGA), camera.snapshot(),
           jpg.encode(img, quality).bytearray()  (older builds: camera.capture_to_jpg)
  faces    dl.ObjectDetector(dl.model.HUMAN_FACE_DETECT).infer(img)
  speaker  M5.Speaker.playRaw(pcm, rate, stereo, repeat, channel, stop_current_sound), isPlaying(), stop()
  mic      M5.Mic.begin() / end() -> bool, record(buf, rate, stereo) -> bool, isRecording() -> 0|1|2
           (M5Unified queues two buffers: 2 = both queued, 1 = the older one is filled, 0 = both are).
           The CoreS3's speaker and microphone share one I2S bus: Speaker.end() before Mic.begin(),
           Mic.end() before Speaker.begin(); never both at once.
  IMU      M5.Imu.getAccel() in g;  touch  M5.Touch.getCount();  buttons  M5.BtnA/BtnPWR.wasPressed()
"""

from hal.esp32 import Esp32Hal

W, H = 320, 240
BLACK, WHITE, RED = 0x000000, 0xFFFFFF, 0xFF3030
ERROR_SHOWN_MS = 10000
MIC_BYTES = 3200  # one microphone buffer: 100 ms at 16 kHz
MIC_RATE = 16000
LIVE = 0xFF2020  # the listening dot: red while the microphone is live


def _problem(what, failure):
    return what + " failed to start: " + type(failure).__name__ + " " + str(failure)


class Hal(Esp32Hal):
    name = "uiflow"
    camera_expected = True

    def __init__(self, config):
        super().__init__(config)
        self.M5 = None
        self.lcd = None
        self.canvas = None
        self.camera = None
        self.encode = None
        self.detector = None
        self._display_problem = "the screen is not started yet"
        self._camera_problem = "camera not ready: not started yet"
        self._speaker_problem = "the speaker is not started yet"
        self._playing = []  # PCM buffers the speaker may still be reading
        self._touching = False
        self._error = None
        self._error_until = 0
        self._mic_problem = "the microphone is not started yet"
        self._mic_buffers = None  # two, made at begin() while the heap is whole
        self._mic_oldest = 0  # the buffer the microphone fills first
        self._mic_on = False

    # --- start-up: each sense on its own, so one broken part leaves the rest working ---

    def begin(self):
        import M5

        self.M5 = M5
        M5.begin()
        self._start_display()
        self._start_camera()
        self._start_speaker()
        self._prepare_mic()

    def _start_display(self):
        try:
            self.lcd = getattr(self.M5, "Lcd", None) or self.M5.Display
            try:
                self.canvas = self.lcd.newCanvas(W, H, 16, True)
            except Exception as failure:  # no PSRAM canvas: draw straight to the screen (flickers)
                print("[soulstack] no canvas, drawing directly:", failure)
                self.canvas = self.lcd
            try:
                self.canvas.setFont(self.M5.Lcd.FONTS.EFontCN24)  # covers Chinese and Latin text
            except Exception:
                pass  # the default font still draws ASCII
            self._display_problem = None
        except Exception as failure:
            self._display_problem = _problem("the screen", failure)

    def _start_camera(self):
        try:
            import camera

            self.camera = camera
            camera.init(pixformat=camera.RGB565, framesize=camera.QVGA)
            for _ in range(2):  # the first frames after init come out dark or green
                camera.snapshot()
            try:
                import jpg

                self.encode = lambda img, q: jpg.encode(img, q)
            except ImportError:
                if not hasattr(camera, "capture_to_jpg"):
                    raise OSError("no JPEG encoder (neither jpg.encode nor camera.capture_to_jpg)")
            self._camera_problem = None
        except Exception as failure:
            self.camera = None
            self._camera_problem = "camera not ready: " + _problem("the camera", failure)
            return
        try:
            import dl

            self.detector = dl.ObjectDetector(dl.model.HUMAN_FACE_DETECT)
        except Exception as failure:
            print("[soulstack] face detection unavailable:", failure)

    def _start_speaker(self):
        try:
            speaker = self.M5.Speaker
            if not speaker.begin():  # it says so by returning False, not by raising
                raise OSError("Speaker.begin() returned False")
            speaker.setVolume(self.config["volume"] * 255 // 100)
            self._speaker_problem = None
        except Exception as failure:
            self._speaker_problem = _problem("the speaker", failure)

    def _prepare_mic(self):
        if getattr(self.M5, "Mic", None) is None:
            self._mic_problem = "this UIFlow2 build has no M5.Mic"
            return
        try:
            self._mic_buffers = (bytearray(MIC_BYTES), bytearray(MIC_BYTES))
            self._mic_problem = None
        except MemoryError:
            self._mic_problem = "no memory for the microphone's buffers"

    def update(self):
        self.M5.update()

    # --- screen ---

    def display_problem(self):
        return self._display_problem

    def draw(self, frame):
        if self._display_problem:
            return
        c = self.canvas
        c.fillScreen(BLACK)
        dy = int(frame.breath * 3)
        gx, gy = int(frame.gaze_x * 6), int(frame.gaze_y * 4)
        expression = frame.expression if frame.blend >= 0.5 else frame.previous
        for x in (90, 230):
            cx, cy = x + gx, 93 + gy + dy
            if frame.eyes_open <= 0.05:
                c.fillRect(cx - 12, cy - 2, 24, 4, WHITE)
            elif expression == "happy":
                c.fillCircle(cx, cy, 10, WHITE)
                c.fillRect(cx - 11, cy, 22, 11, BLACK)  # an upturned half-moon
            else:
                radius = 8 if frame.eyes_open > 0.5 else 6
                c.fillCircle(cx, cy, radius, WHITE)
                if frame.eyes_open < 0.5:
                    c.fillRect(cx - 9, cy - 9, 18, 7, BLACK)  # heavy lids
        self._brows(c, expression, dy)
        opening = int(frame.mouth * 26)
        width = 90 - int(frame.mouth * 30)
        c.fillRect(160 - width // 2, 148 + dy - opening // 2, width, 4 + opening, WHITE)
        # drawString(text, x, y[, font]): its fourth argument is a font, so the colour is set first.
        if frame.balloon:
            c.fillRoundRect(8, 176, W - 16, 60, 10, WHITE)
            c.setTextColor(BLACK, WHITE)
            for row, line in enumerate(frame.balloon):
                c.drawString(line, 18, 182 + 26 * row)
        if frame.indicator == "listening":  # privacy: whenever the microphone is live, a red dot says so
            c.fillCircle(W - 16, 16, 8, LIVE)
        elif frame.indicator == "thinking":
            for i in range(3):
                c.fillCircle(W - 40 + 12 * i, 16, 3, WHITE)
        if self._error and self.clock.ms() < self._error_until:
            c.setTextColor(RED, BLACK)
            c.drawString(self._error[:26], 4, 2)
        if c is not self.lcd:
            c.push(0, 0)

    def _brows(self, c, expression, dy):
        if expression == "angry":
            c.drawLine(72, 70 + dy, 106, 80 + dy, WHITE)
            c.drawLine(214, 80 + dy, 248, 70 + dy, WHITE)
        elif expression == "sad":
            c.drawLine(72, 80 + dy, 106, 70 + dy, WHITE)
            c.drawLine(214, 70 + dy, 248, 80 + dy, WHITE)
        elif expression == "doubtful":
            c.drawLine(72, 74 + dy, 106, 74 + dy, WHITE)
            c.drawLine(214, 66 + dy, 248, 60 + dy, WHITE)  # one brow raised

    def show_error(self, text):
        self._error = text
        self._error_until = self.clock.ms() + ERROR_SHOWN_MS

    # --- camera and faces ---

    def camera_problem(self):
        return self._camera_problem

    def snapshot_jpeg(self, quality=70):
        camera = self.camera
        if self.encode:
            encoded = self.encode(camera.snapshot(), quality)
            self._last_jpeg = encoded  # the bytearray below points into it: keep it alive
            return encoded.bytearray()
        return camera.capture_to_jpg(quality)

    def detect_face(self):
        if not self.detector or self._camera_problem:
            return None
        return bool(self.detector.infer(self.camera.snapshot()))

    # --- speaker ---

    def speaker_problem(self):
        return self._speaker_problem

    def play_start(self, rate, channels):
        self._rate = rate
        self._stereo = channels == 2
        self._playing = []

    def play(self, pcm):
        # playRaw keeps a pointer to the buffer, and queues at most two per channel:
        # hold the last three so none is collected while it is still being played.
        self._playing.append(pcm)
        if len(self._playing) > 3:
            self._playing.pop(0)
        self.M5.Speaker.playRaw(pcm, self._rate, self._stereo, 1, 0, False)

    def play_end(self):
        pass  # the last buffers finish on their own; they stay referenced until the next play_start

    def playing(self):
        try:
            return bool(self.M5.Speaker.isPlaying())
        except Exception:
            return False

    def play_stop(self):
        # Guarded like playing(): a driver error here must not keep the soul from hearing what was said.
        try:
            self.M5.Speaker.stop()
        except Exception as failure:
            print("[soulstack] Speaker.stop failed:", failure)

    # --- microphone (one I2S bus with the speaker: see the module doc) ---

    def mic_problem(self):
        return self._mic_problem

    def mic_start(self):
        M5 = self.M5
        M5.Speaker.end()
        if not M5.Mic.begin():
            self._speaker_back()
            raise OSError("Mic.begin() returned False")
        self._mic_on = True
        self._mic_oldest = 0
        for buffer in self._mic_buffers:
            M5.Mic.record(buffer, MIC_RATE, False)

    def mic_read(self, buffer):
        """Copy the older filled microphone buffer into `buffer` and queue it again; bytes copied (0: none yet)."""
        if not self._mic_on:
            return 0
        M5 = self.M5
        if M5.Mic.isRecording() >= 2:
            return 0  # both still being filled
        filled = self._mic_buffers[self._mic_oldest]
        size = min(len(buffer), MIC_BYTES)
        buffer[:size] = memoryview(filled)[:size]
        M5.Mic.record(filled, MIC_RATE, False)
        self._mic_oldest = 1 - self._mic_oldest
        return size

    def mic_stop(self):
        if self._mic_on:
            self._mic_on = False
            self.M5.Mic.end()
            self._speaker_back()

    def _speaker_back(self):
        try:
            if self.M5.Speaker.begin():
                self.M5.Speaker.setVolume(self.config["volume"] * 255 // 100)
        except Exception as failure:
            self._speaker_problem = _problem("the speaker", failure)

    # --- IMU, touch, buttons ---

    def read_accel(self):
        try:
            return self.M5.Imu.getAccel()
        except Exception:
            return None

    def poll_event(self):
        M5 = self.M5
        try:
            touching = M5.Touch.getCount() > 0
        except Exception:
            touching = False
        began = touching and not self._touching
        self._touching = touching
        if began:
            return "touch"
        for name in ("BtnA", "BtnPWR"):
            button = getattr(M5, name, None)
            try:
                if button and button.wasPressed():
                    return "button"
            except Exception:
                pass
        return None
