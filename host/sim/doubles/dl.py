"""A double of UIFlow2's `dl` module (docs/en/advanced/dl.rst), face detection only.

ObjectDetector(model) with dl.model.HUMAN_FACE_DETECT or PEDESTRIAN_DETECT;
infer(img) takes the camera's RGB565 image.Image and returns the detections
(DetectionResult objects with bbox(), x(), y(), w(), h(), category(),
keypoint()); the vendor's example tests the result for truth, so none found
is an empty, false result. World file `face` present means one face in view;
`dl` = missing means a build without this module.
"""

import _double
import camera

if _double.world("dl", "ok") == "missing":
    raise ImportError("no module named 'dl'")


class model:
    HUMAN_FACE_DETECT = 0
    PEDESTRIAN_DETECT = 1


class DetectionResult:
    def __init__(self, box):
        self._box = box

    def bbox(self):
        return self._box

    def x(self):
        return self._box[0]

    def y(self):
        return self._box[1]

    def w(self):
        return self._box[2]

    def h(self):
        return self._box[3]

    def category(self):
        return 0

    def keypoint(self):
        x, y, w, h = self._box
        return (
            x + w // 3,
            y + h // 3,
            x + w // 3,
            y + 2 * h // 3,
            x + w // 2,
            y + h // 2,
            x + 2 * w // 3,
            y + h // 3,
            x + 2 * w // 3,
            y + 2 * h // 3,
        )


class ObjectDetector:
    def __init__(self, *args, **kwargs):
        parsed = _double.call("dl.ObjectDetector", args, kwargs, [("model", "int", True)])
        if parsed["model"] not in (model.HUMAN_FACE_DETECT, model.PEDESTRIAN_DETECT):
            raise ValueError("dl.ObjectDetector: unknown model " + str(parsed["model"]))

    def infer(self, *args, **kwargs):
        parsed = _double.accept("ObjectDetector.infer", args, kwargs, [("img", camera.Image, True)])
        if parsed["img"].format() != camera.RGB565:
            raise ValueError("ObjectDetector.infer: the image must be the camera's RGB565 frame")
        found = [DetectionResult((120, 70, 80, 100))] if _double.world("face", "absent") == "present" else []
        _double.record("ObjectDetector.infer", {"found": len(found)})
        return found
